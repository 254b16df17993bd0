package backend

import (
	"sync"
	"time"

	"tgc/pkg/ir"
)

// CompileCounts says how often a device ran its compiler and how often a
// kernel came from the kernel cache instead (for DEBUG and the run summary).
type CompileCounts struct {
	Builds    int
	CacheHits int
	Time      time.Duration // spent compiling
}

// countingDevice is implemented by devices that compile source (CPU, CL,
// CUDA).
type countingDevice interface {
	compileCounted(ks []*ir.Kernel) ([]Program, CompileCounts, error)
}

// CompileCounted compiles ks on d and says what that took: compiler runs
// and kernel-cache hits of this call only (devices are shared by the
// engines of one process, so a run cannot read a device-wide counter).
// A device that compiles nothing (GO) reports zeros.
func CompileCounted(d Device, ks []*ir.Kernel) ([]Program, CompileCounts, error) {
	if c, ok := d.(countingDevice); ok {
		return c.compileCounted(ks)
	}
	progs, err := d.Compile(ks)
	return progs, CompileCounts{}, err
}

// compileCounter counts one device's compiles. Devices compile under their
// lock, so the difference across one call is that call's.
type compileCounter struct {
	mu sync.Mutex // builds run in parallel within a call
	c  CompileCounts
}

func (c *compileCounter) built(since time.Time) {
	c.mu.Lock()
	c.c.Builds++
	c.c.Time += time.Since(since)
	c.mu.Unlock()
}

func (c *compileCounter) hit() {
	c.mu.Lock()
	c.c.CacheHits++
	c.mu.Unlock()
}

// during runs compile (with the device's lock held) and returns the counts
// it added.
func (c *compileCounter) during(compile func() ([]Program, error)) ([]Program, CompileCounts, error) {
	c.mu.Lock()
	before := c.c
	c.mu.Unlock()
	progs, err := compile()
	c.mu.Lock()
	after := c.c
	c.mu.Unlock()
	return progs, CompileCounts{after.Builds - before.Builds, after.CacheHits - before.CacheHits, after.Time - before.Time}, err
}
