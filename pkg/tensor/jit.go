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
	// device is the device memory of Buffers on this storage that were
	// host data: the first upload sets it, so a bitcast view of host data
	// (Tensor.Bitcast) shares the upload instead of making a copy.
	device any
	// released: the memory went back to its device (Tensor.Release); the
	// version was bumped with it, so every Buffer on it is stale.
	released bool
}

// Memory identifies the memory of a buffer: Buffers on one storage
// (aliases, in-place writes, bitcast views) return the same value.
func (b *Buffer) Memory() any { return b.shared() }

// SharedDevice returns the device memory another Buffer on b's memory was
// uploaded to (nil if none).
func (b *Buffer) SharedDevice() any {
	s := b.store.Load()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.device
}

// SetSharedDevice records the device memory b's host data was uploaded to
// (engine use), for the other Buffers on the same memory.
func (b *Buffer) SetSharedDevice(d any) {
	s := b.shared()
	s.mu.Lock()
	s.device = d
	s.mu.Unlock()
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
	return b.locked(func(s *storage) bool { return s.version != b.version })
}

// locked is f of b's storage under its lock (false where b has none yet).
func (b *Buffer) locked(f func(*storage) bool) bool {
	s := b.store.Load()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return f(s)
}

// bump records a write of the storage's memory, or with release its
// return to the device, and returns the new version: every Buffer on it
// is stale.
func (s *storage) bump(release bool) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	s.released = s.released || release
	return s.version
}

// Overwritten records an in-place write of dst's memory (engine use) and
// returns the Buffer holding the new value on the same memory: dst and its
// aliases become stale.
func Overwritten(dst *Buffer, device any) *Buffer {
	return dst.sameMemory(nil, device, dst.shared().bump(false))
}

// FromDevice makes a realized tensor on device memory the engine owns
// (TinyJit's outputs).
func (c *Context) FromDevice(dt ir.DType, shape []int, device any) *Tensor {
	b := &Buffer{ID: NewID(), DType: dt, Size: prod(shape), Device: device}
	return &Tensor{node: c.newNode(ir.OpBuffer, dt, shape, b)}
}

// FromDeviceOwned is FromDevice for device memory that nothing but the
// new tensor holds (a TinyJit replay's freshly allocated output), which
// Release may therefore give back.
func (c *Context) FromDeviceOwned(dt ir.DType, shape []int, device any) *Tensor {
	t := c.FromDevice(dt, shape, device)
	t.node.Realized().owned.Store(true)
	return t
}

// Release gives the device memory of a tensor made by FromDeviceOwned back
// to its device now, instead of when the garbage collector finds the
// tensor unreachable, and reports whether it did (false for any other
// tensor). The tensor, and every view of its memory, is stale afterwards:
// reading it or computing from it is an error. A decode loop that copies
// each step's logits to the host releases them, so the next step's
// output is the same pooled memory: a fresh mapping costs a page fault
// per 4 KiB inside the kernel that first writes it (~13 µs each on the
// 2-vCPU guest, ~0.3 ms of the classifier's 128 KB of logits a token).
func (t *Tensor) Release() bool {
	if t.err != nil || t.node.Op != ir.OpBuffer {
		return false
	}
	b := t.node.Realized()
	if b == nil || !b.owned.CompareAndSwap(true, false) {
		return false
	}
	f, ok := b.Device.(interface{ Free() })
	if !ok {
		return false
	}
	b.shared().bump(true)
	f.Free()
	return true
}

// Released reports whether the buffer's memory was given back
// (Tensor.Release).
func (b *Buffer) Released() bool {
	return b.locked(func(s *storage) bool { return s.released })
}

// memoryView reads the memory of a realized tensor as another dtype,
// without a copy (tinygrad's bitcast of a buffer): the last dimension is
// scaled by the ratio of the element sizes. It is how quantized weights
// reach their float16 scales and int8 values inside the blocks of raw
// bytes: the kernels load those dtypes directly. Bitcast calls it for a
// realized tensor.
func (t *Tensor) memoryView(dt ir.DType) *Tensor {
	b := t.node.Realized()
	if b == nil || !t.viewable() {
		return errorf("bitcast", "only a realized tensor's memory can be read as a dtype of another size (realize it first)")
	}
	if t.node.HasSym() || t.Ndim() == 0 {
		return errorf("bitcast", "cannot bitcast a tensor of shape %s", t.node.shapeString())
	}
	shape := t.Shape()
	last := shape[len(shape)-1] * t.DType().Size()
	if last%dt.Size() != 0 {
		return errorf("bitcast", "the last dimension of %s %s holds %d bytes, not a whole number of %s", t.DType(), FormatShape(shape), last, dt)
	}
	shape[len(shape)-1] = last / dt.Size()
	a := &Buffer{ID: NewID(), DType: dt, Size: prod(shape), Host: b.Host, Device: b.Device, Name: b.Name, Weight: b.Weight, version: b.version}
	a.store.Store(b.shared())
	return FromNode(t.node.ctx.newNode(ir.OpBuffer, dt, shape, a))
}

// viewable says whether t is a realized tensor whose memory memoryView can
// read (a buffer, an assign's target, a realized CONTIGUOUS).
func (t *Tensor) viewable() bool {
	return t.node.Realized() != nil && (t.node.Op == ir.OpBuffer || t.node.AssignTarget() != nil || t.node.Op == ir.OpContiguous)
}

// Upload puts a realized tensor's host data on its engine's device now
// (when the engine has one), so that the host memory can be let go: a
// model loader releases each mapped weight once it is on the device.
func (t *Tensor) Upload() error {
	if t.err != nil {
		return t.err
	}
	u, ok := t.node.ctx.engine.(interface{ Upload(*Node) error })
	if !ok || t.node.Realized() == nil {
		return nil
	}
	return u.Upload(t.node)
}
