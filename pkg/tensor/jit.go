package tensor

import (
	"sync"

	"tgc/pkg/ir"
)

// What in-place assign and TinyJit (pkg/realize) need from the tensor
// package: storage versions and realized tensors on existing device memory
// (the random stream and the losses backward was called on are the
// context's).

// storage is the memory several Buffers share (aliases made by Detach and
// the optimizers' rebinding). Its version counts the in-place writes.
type storage struct {
	mu      sync.Mutex
	version uint64
}

// shared returns the buffer's storage, creating it on first use.
func (b *Buffer) shared() *storage {
	if s := b.store.Load(); s != nil {
		return s
	}
	b.store.CompareAndSwap(nil, &storage{})
	return b.store.Load()
}

// sameMemory is a new Buffer on b's storage (an alias, or the value of
// an in-place write): the handles given, the storage version given.
func (b *Buffer) sameMemory(host []byte, device any, version uint64) *Buffer {
	n := &Buffer{ID: NewID(), DType: b.DType, Size: b.Size, Host: host, Device: device, Name: b.Name, Weight: b.Weight, version: version}
	n.store.Store(b.shared())
	return n
}

// Stale reports whether the buffer's memory has been overwritten by an
// in-place assign since this Buffer's value was current: a graph built on
// the old value must not read the new one.
func (b *Buffer) Stale() bool {
	s := b.store.Load()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version != b.version
}

// Overwritten records an in-place write of dst's memory (engine use) and
// returns the Buffer holding the new value on the same memory: dst and its
// aliases become stale.
func Overwritten(dst *Buffer, device any) *Buffer {
	s := dst.shared()
	s.mu.Lock()
	s.version++
	v := s.version
	s.mu.Unlock()
	return dst.sameMemory(nil, device, v)
}

// FromDevice makes a realized tensor on device memory the engine owns
// (TinyJit's outputs).
func (c *Context) FromDevice(dt ir.DType, shape []int, device any) *Tensor {
	b := &Buffer{ID: NewID(), DType: dt, Size: prod(shape), Device: device}
	return &Tensor{node: c.newNode(ir.OpBuffer, dt, shape, b)}
}
