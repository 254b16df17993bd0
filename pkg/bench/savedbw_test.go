package bench

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestHostReadBandwidthSaved: a measurement is kept for a week, for one
// host and one buffer size; anything else in the file (another host, size,
// age, a date ahead of the clock, a broken or oversized file, an
// implausible figure) is measured again and replaced.
func TestHostReadBandwidthSaved(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	const host, size = "cpu A|avx2|2 cores", 128 << 20
	save := func(dir string) { SaveReadBandwidth(dir, host, size, 20, now.Add(-time.Hour)) }
	write := func(data string) func(string) {
		return func(dir string) {
			p := filepath.Join(dir, savedReadBandwidthFile)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	big := make([]byte, savedReadBandwidthLimit+1)
	for i := range big {
		big[i] = ' '
	}
	cases := []struct {
		name    string
		prepare func(dir string)
		host    string
		size    int
		saved   bool
	}{
		{"none yet", func(string) {}, host, size, false},
		{"kept", save, host, size, true},
		{"six days old", func(dir string) { SaveReadBandwidth(dir, host, size, 20, now.Add(-6*24*time.Hour)) }, host, size, true},
		{"eight days old", func(dir string) { SaveReadBandwidth(dir, host, size, 20, now.Add(-8*24*time.Hour)) }, host, size, false},
		{"dated ahead of the clock", func(dir string) { SaveReadBandwidth(dir, host, size, 20, now.Add(time.Hour)) }, host, size, false},
		{"another host", save, "cpu B|avx512f|2 cores", size, false},
		{"another buffer", save, host, 64 << 20, false},
		{"broken json", write(`{"host": "cpu A|avx2|2 cores", "gbps": `), host, size, false},
		{"oversized", write(`{"host": "cpu A|avx2|2 cores", "buffer_bytes": 134217728, "gbps": 20, "measured": "2026-12-04T11:00:00Z"}` + string(big)), host, size, false},
		{"zero", write(`{"host": "cpu A|avx2|2 cores", "buffer_bytes": 134217728, "gbps": 0, "measured": "2026-12-04T11:00:00Z"}`), host, size, false},
		{"negative", write(`{"host": "cpu A|avx2|2 cores", "buffer_bytes": 134217728, "gbps": -3, "measured": "2026-12-04T11:00:00Z"}`), host, size, false},
		{"a FIFO in its place", func(dir string) {
			p := filepath.Join(dir, savedReadBandwidthFile)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip(err)
			}
		}, host, size, false},
		{"a link to a kept file", func(dir string) {
			other := t.TempDir()
			save(other)
			p := filepath.Join(dir, savedReadBandwidthFile)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(other, savedReadBandwidthFile), p); err != nil {
				t.Fatal(err)
			}
		}, host, size, false},
		{"a directory in its place", func(dir string) {
			if err := os.MkdirAll(filepath.Join(dir, savedReadBandwidthFile), 0o700); err != nil {
				t.Fatal(err)
			}
		}, host, size, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.prepare(dir)
			measured := 0
			gbps, saved := hostReadBandwidth(dir, c.host, c.size, now, func() float64 { measured++; return 31.5 })
			if saved != c.saved {
				t.Fatalf("saved %v, want %v", saved, c.saved)
			}
			want, wantMeasured := 20.0, 0
			if !c.saved {
				want, wantMeasured = 31.5, 1
			}
			if gbps != want || measured != wantMeasured {
				t.Fatalf("%g GB/s after %d measurements, want %g after %d", gbps, measured, want, wantMeasured)
			}
			if c.saved || c.name == "a directory in its place" {
				return
			}
			// the measurement replaced the file: the next run reads it
			again, saved := hostReadBandwidth(dir, c.host, c.size, now.Add(time.Minute), func() float64 { measured++; return 99 })
			if !saved || again != 31.5 || measured != 1 {
				t.Errorf("next run: %g GB/s, saved %v, %d measurements; want 31.5 from the file", again, saved, measured)
			}
			st, err := os.Stat(filepath.Join(dir, savedReadBandwidthFile))
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("file: %v, mode %v; want 0600", err, st.Mode())
			}
		})
	}
}

// TestHostReadBandwidthNoDir: without a directory nothing is kept and
// every call measures.
func TestHostReadBandwidthNoDir(t *testing.T) {
	measured := 0
	for range 2 {
		if _, saved := hostReadBandwidth("", "h", 1<<20, time.Now(), func() float64 { measured++; return 1 }); saved {
			t.Fatal("saved without a directory")
		}
	}
	if measured != 2 {
		t.Errorf("%d measurements, want 2", measured)
	}
}

// FuzzLoadReadBandwidth: any bytes in the saved file load without a panic,
// and what loads is a plausible figure.
func FuzzLoadReadBandwidth(f *testing.F) {
	f.Add([]byte(`{"host": "cpu A|avx2|2 cores", "buffer_bytes": 134217728, "gbps": 20, "measured": "2026-12-04T11:00:00Z"}`))
	f.Add([]byte(`{"gbps": 1e400}`))
	f.Add([]byte(`{"gbps": "20", "measured": "yesterday"}`))
	f.Add([]byte(`[1, 2, 3]`))
	f.Add([]byte{0xff, 0x00, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, savedReadBandwidthFile)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if s, ok := loadReadBandwidth(dir); ok && !(s.GBPS > 0 && s.GBPS <= 1e5) {
			t.Errorf("loaded an implausible %g GB/s", s.GBPS)
		}
	})
}
