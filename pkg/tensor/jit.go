package tensor

import (
	"sync"
	"weak"

	"tgc/pkg/ir"
)

// What in-place assign and TinyJit (pkg/realize) need from the tensor
// package: storage versions, the random stream's state, realized tensors
// on existing device memory, and the losses backward was called on.

// storage is the memory several Buffers share (aliases made by Detach and
// the optimizers' rebinding). Its version counts the in-place writes.
type storage struct {
	mu      sync.Mutex
	version uint64
}

var storeMu sync.Mutex

// shared returns the buffer's storage, creating it on first use.
func (b *Buffer) shared() *storage {
	storeMu.Lock()
	defer storeMu.Unlock()
	if b.store == nil {
		b.store = &storage{}
	}
	return b.store
}

// Stale reports whether the buffer's memory has been overwritten by an
// in-place assign since this Buffer's value was current: a graph built on
// the old value must not read the new one.
func (b *Buffer) Stale() bool {
	storeMu.Lock()
	s := b.store
	storeMu.Unlock()
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
	return &Buffer{ID: NewID(), DType: dst.DType, Size: dst.Size, Device: device, Name: dst.Name, Weight: dst.Weight, store: s, version: v}
}

// FromDevice makes a realized tensor on device memory the engine owns
// (TinyJit's outputs).
func FromDevice(dt ir.DType, shape []int, device any) *Tensor {
	b := &Buffer{ID: NewID(), DType: dt, Size: prod(shape), Device: device}
	return &Tensor{node: newNode(ir.OpBuffer, dt, shape, b)}
}

// RandState returns the seed and the counter of the last random tensor.
func RandState() (uint64, uint64) { return seed, randCounter }

// AdvanceRand moves the random stream on by n tensors, as if Rand had been
// called n times (a TinyJit replay draws the numbers inside its kernels).
func AdvanceRand(n uint64) { randCounter += n }

var (
	lossMu sync.Mutex
	losses []weak.Pointer[Tensor]
)

// NoteBackward remembers a loss that backward was called on, so that the
// next optimizer step realizes it with the update (reading it after the
// step, as tinygrad's training loops do, would otherwise read parameters
// the step overwrote in place).
func NoteBackward(loss *Tensor) {
	lossMu.Lock()
	defer lossMu.Unlock()
	losses = append(losses, weak.Make(loss))
	if len(losses) > 64 { // a loop that never steps: keep the newest
		losses = append([]weak.Pointer[Tensor]{}, losses[len(losses)-32:]...)
	}
}

// TakeBackwardLosses returns the live, unrealized losses noted since the
// last call and forgets them.
func TakeBackwardLosses() []*Tensor {
	lossMu.Lock()
	defer lossMu.Unlock()
	var out []*Tensor
	for _, wp := range losses {
		if t := wp.Value(); t != nil && t.err == nil && t.node.Realized() == nil {
			out = append(out, t)
		}
	}
	losses = nil
	return out
}
