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
