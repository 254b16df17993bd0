package bench

import (
	"testing"

	"tgc/pkg/backend"
)

// TestReadBufferBytes: the read bandwidth's buffer is twice the last-level
// cache within [256 MiB, 1 GiB]: past a Zen 4's 32 MiB L3 by 8x, past the
// 508 MiB a Zen 5 guest's CPUID reports for its socket, and the floor
// where the cache is unknown.
func TestReadBufferBytes(t *testing.T) {
	for _, tc := range []struct {
		l3   int64
		want int
	}{{0, 256 << 20}, {32 << 20, 256 << 20}, {200 << 20, 400 << 20}, {508 << 20, 1016 << 20}, {4 << 30, 1 << 30}} {
		if got := ReadBufferBytes(backend.HostCPU{L3: tc.l3}); got != tc.want {
			t.Errorf("L3 %d: %d bytes, want %d", tc.l3, got, tc.want)
		}
	}
}

// TestMeasureReadBandwidthOf: a small buffer (one chunk) gives a positive
// rate whose seconds are the bytes of one chunk at that rate.
func TestMeasureReadBandwidthOf(t *testing.T) {
	r := MeasureReadBandwidthOf(4 << 20)
	if r.Name != "read_bandwidth" || r.GBPS <= 0 || r.Seconds <= 0 {
		t.Fatalf("%+v", r)
	}
	if got := float64(4<<20) / r.Seconds / 1e9; got/r.GBPS < 0.999 || got/r.GBPS > 1.001 {
		t.Errorf("rate %.3f GB/s, seconds say %.3f", r.GBPS, got)
	}
}
