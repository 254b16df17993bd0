package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"tgc/pkg/backend"
)

// A host's read bandwidth does not change from one `tgc generate` to the
// next, and measuring it takes ~1 s (the buffer's pages faulted in, ten
// sweeps and more), twice what a short generation takes (0.5 s for a Q4_K
// 110M's 8 tokens from a warm cache). So generate measures it once and
// keeps it in the cache directory, for a week, per host (the CPU's model
// and flags, the cores, the L3: a resized or migrated virtual machine is
// a new host). `tgc bench` always measures.
const (
	savedReadBandwidthFile   = "host/read-bandwidth.json"
	savedReadBandwidthMaxAge = 7 * 24 * time.Hour
	savedReadBandwidthLimit  = 64 << 10 // bytes: a few lines, the CPU's flags the longest (~1.5 KB)
)

// savedReadBandwidth is the file's content.
type savedReadBandwidth struct {
	Host     string    `json:"host"`
	Buffer   int       `json:"buffer_bytes"`
	GBPS     float64   `json:"gbps"`
	Measured time.Time `json:"measured"`
}

// ThisHost is the name HostReadBandwidth files this host under.
func ThisHost() string {
	h := backend.Host()
	return fmt.Sprintf("%s|%s|%d cores|L3 %d|%s", h.Model, strings.Join(h.Flags, " "), h.Cores, h.L3, runtime.GOARCH)
}

// HostReadBandwidth is this host's read bandwidth in GB/s over a buffer of
// size bytes (MeasureReadBandwidthOf): the one dir keeps (dir "": the
// kernel cache's), if it was measured here over the same size within a
// week, else measured now and kept (best effort: a directory that cannot
// be written costs the next run a measurement, nothing more). saved says
// it was not measured now.
func HostReadBandwidth(dir string, size int) (gbps float64, saved bool) {
	if dir == "" {
		dir = backend.CacheDir()
	}
	return hostReadBandwidth(dir, ThisHost(), size, time.Now(), func() float64 { return MeasureReadBandwidthOf(size).GBPS })
}

// hostReadBandwidth is HostReadBandwidth with the host, the clock and the
// measurement as parameters (the tests fake them); an empty dir keeps
// nothing.
func hostReadBandwidth(dir, host string, size int, now time.Time, measure func() float64) (float64, bool) {
	if dir != "" {
		if s, ok := loadReadBandwidth(dir); ok && s.Host == host && s.Buffer == size &&
			!s.Measured.After(now) && now.Sub(s.Measured) < savedReadBandwidthMaxAge {
			return s.GBPS, true
		}
	}
	gbps := measure()
	if dir != "" && gbps > 0 {
		SaveReadBandwidth(dir, host, size, gbps, now)
	}
	return gbps, false
}

// loadReadBandwidth reads dir's file; a missing, oversized, malformed,
// implausible or irregular one (a link, a FIFO) is no entry, replaced by
// the next measurement.
func loadReadBandwidth(dir string) (savedReadBandwidth, bool) {
	var s savedReadBandwidth
	// a regular file only, opened without following a link and without
	// blocking (a FIFO in its place would hang the run, as the kernel
	// cache's checks say: docs/architecture.md)
	path := filepath.Join(dir, savedReadBandwidthFile)
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		return s, false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return s, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, savedReadBandwidthLimit+1))
	if err != nil || len(data) > savedReadBandwidthLimit || json.Unmarshal(data, &s) != nil {
		return s, false
	}
	if math.IsNaN(s.GBPS) || s.GBPS <= 0 || s.GBPS > 1e5 {
		return s, false
	}
	return s, true
}

// SaveReadBandwidth writes the file for host (ThisHost's form),
// atomically: a temporary file
// in the same directory renamed into place, so concurrent runs each see a
// whole file. Errors are dropped: the file is a cache.
func SaveReadBandwidth(dir, host string, size int, gbps float64, when time.Time) {
	path := filepath.Join(dir, savedReadBandwidthFile)
	data, err := json.MarshalIndent(savedReadBandwidth{Host: host, Buffer: size, GBPS: gbps, Measured: when.UTC()}, "", "  ")
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".read-bandwidth-*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}
