package backend

import (
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"tgc/pkg/ir"
)

// BenchmarkLaunch is what a launch costs around its kernel: a kernel of 768
// items that adds 1 to each (~nothing to compute) run through
// cpuProgram.Run on the caller's thread (a small kernel) and split across
// the cores (the launcher), in a batch like a decode step's, and the bare
// purego call for scale.
func BenchmarkLaunch(b *testing.B) {
	cc, err := findCompiler()
	if err != nil {
		b.Skip(err)
	}
	b.Setenv("TGC_CACHE", b.TempDir())
	d := &cpuDevice{cc: cc, progs: map[string]*cpuProgram{}}
	if d.launch, err = d.loadLauncher(); err != nil {
		b.Fatal(err)
	}
	lib, err := d.build(addOne)
	if err != nil {
		b.Fatal(err)
	}
	sym, err := purego.Dlsym(lib.handle, "add_one")
	if err != nil {
		b.Fatal(err)
	}
	buf := &hostBuffer{data: make([]byte, 4*768)}
	for _, small := range []bool{true, false} {
		name := "split"
		if small {
			name = "caller"
		}
		b.Run(name, func(b *testing.B) {
			p := &cpuProgram{name: "add_one", fn: sym, lib: lib, small: small, launch: d.launch, outer: &ir.Axis{Size: 768}}
			for range b.N {
				if _, err := p.Run([]Buffer{buf}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// a decode step's pattern: 184 launches, 97 split and 87 on the
	// caller, as one batch (ns/op per launch), the threads polling and
	// always sleeping (what a wake-up costs: futex both ways)
	for _, sleep := range []bool{false, true} {
		name := "batch"
		l := *d.launch
		if sleep {
			name, l.spin, l.wait = "batch-sleeping", 0, 0
		}
		b.Run(name, func(b *testing.B) {
			ls := make([]Launch, 184)
			for i := range ls {
				p := &cpuProgram{name: "add_one", fn: sym, lib: lib, small: i%2 == 1 && i < 174, launch: &l, outer: &ir.Axis{Size: 768}}
				ls[i] = Launch{Prog: p, Bufs: []Buffer{buf}}
			}
			times := make([]time.Duration, len(ls))
			b.ResetTimer()
			for range b.N / len(ls) {
				if err := d.RunBatch(ls, times); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	if d.launch != nil {
		l := *d.launch
		l.spin, l.wait = 0, 0
		b.Run("split-sleeping", func(b *testing.B) {
			p := &cpuProgram{name: "add_one", fn: sym, lib: lib, launch: &l, outer: &ir.Axis{Size: 768}}
			for range b.N {
				if _, err := p.Run([]Buffer{buf}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("purego", func(b *testing.B) {
		ptrs := []uintptr{uintptr(unsafe.Pointer(&buf.data[0]))}
		for range b.N {
			purego.SyscallN(sym, uintptr(unsafe.Pointer(&ptrs[0])), 0, 0, 0)
		}
	})
}
