package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Write encodes a GGUF file of the given version (2 or 3) to w: the metadata
// and tensor infos in the order given, then each tensor's data (t.Offset is
// ignored) padded to the alignment, which is metadata general.alignment if
// present, else 32. Everything is checked before the first byte is written.
func Write(w io.Writer, version uint32, md []KV, tensors []Tensor) error {
	if err := write(w, version, md, tensors); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

func write(w io.Writer, version uint32, md []KV, tensors []Tensor) error {
	if version != 2 && version != 3 {
		return fmt.Errorf("version %d: only 2 and 3 can be written", version)
	}
	align := int64(DefaultAlignment)
	keys := map[string]bool{}
	for _, kv := range md {
		if keys[kv.Key] {
			return fmt.Errorf("metadata %q: duplicate key", kv.Key)
		}
		keys[kv.Key] = true
		if err := checkValue(kv.Value, 0); err != nil {
			return fmt.Errorf("metadata %q: %w", kv.Key, err)
		}
		if kv.Key == AlignmentKey {
			a, ok := kv.Value.Data.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 || a > 1<<30 {
				return fmt.Errorf("metadata %q must be a uint32 power of two", AlignmentKey)
			}
			align = int64(a)
		}
	}
	names := map[string]bool{}
	offsets := make([]uint64, len(tensors))
	var pos int64
	for i, t := range tensors {
		switch {
		case t.Name == "":
			return fmt.Errorf("tensor %d: empty name", i)
		case names[t.Name]:
			return fmt.Errorf("tensor %q: duplicate name", t.Name)
		case len(t.Dims) > MaxDims:
			return fmt.Errorf("tensor %q: %d dimensions, at most %d are allowed", t.Name, len(t.Dims), MaxDims)
		case !t.Type.Supported():
			return fmt.Errorf("tensor %q: %v is not a supported type", t.Name, t.Type)
		}
		names[t.Name] = true
		size, err := byteSize(t.Type, t.Dims)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if size != int64(len(t.Data)) {
			return fmt.Errorf("tensor %q: data is %d bytes, but %v%v needs %d", t.Name, len(t.Data), t.Type, t.Dims, size)
		}
		offsets[i] = uint64(pos)
		pos = alignUp(pos+size, align)
	}

	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.bytes([]byte(Magic))
	e.u32(version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(md)))
	for _, kv := range md {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type))
		e.value(kv.Value)
	}
	for i, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(offsets[i])
	}
	e.pad(align)
	for _, t := range tensors {
		e.bytes(t.Data)
		e.pad(align)
	}
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

// checkValue checks that a value's Go data matches its type.
func checkValue(v Value, depth int) error {
	if v.Type == TypeArray {
		a, ok := v.Data.(Array)
		if !ok {
			return fmt.Errorf("array value holds %T, not an Array", v.Data)
		}
		return checkArray(a, depth)
	}
	want, ok := sliceType(sliceOf(v.Data))
	if !ok || want != v.Type {
		return fmt.Errorf("value of type %v holds %T", v.Type, v.Data)
	}
	return nil
}

func checkArray(a Array, depth int) error {
	if depth >= maxNesting {
		return fmt.Errorf("arrays nested more than %d deep", maxNesting)
	}
	t, ok := sliceType(a.Values)
	if !ok || t != a.Elem {
		return fmt.Errorf("array of %v holds %T", a.Elem, a.Values)
	}
	if nested, ok := a.Values.([]Array); ok {
		for i, x := range nested {
			if err := checkArray(x, depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	}
	return nil
}

// sliceOf wraps a scalar in a one-element slice, to reuse sliceType.
func sliceOf(x any) any {
	switch v := x.(type) {
	case uint8:
		return []uint8{v}
	case int8:
		return []int8{v}
	case uint16:
		return []uint16{v}
	case int16:
		return []int16{v}
	case uint32:
		return []uint32{v}
	case int32:
		return []int32{v}
	case float32:
		return []float32{v}
	case bool:
		return []bool{v}
	case string:
		return []string{v}
	case uint64:
		return []uint64{v}
	case int64:
		return []int64{v}
	case float64:
		return []float64{v}
	}
	return nil
}

// encoder writes little-endian fields, keeping the first error.
type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [8]byte
}

func (e *encoder) bytes(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) u8(v uint8)   { e.bytes([]byte{v}) }
func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:], v); e.bytes(e.buf[:2]) }
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.bytes(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.bytes(e.buf[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.bytes([]byte(s)) }

func (e *encoder) pad(align int64) {
	if n := alignUp(e.n, align) - e.n; n > 0 {
		e.bytes(make([]byte, n))
	}
}

func (e *encoder) value(v Value) {
	switch x := v.Data.(type) {
	case Array:
		e.array(x)
	default:
		e.scalar(x)
	}
}

func (e *encoder) scalar(x any) {
	switch v := x.(type) {
	case uint8:
		e.u8(v)
	case int8:
		e.u8(uint8(v))
	case uint16:
		e.u16(v)
	case int16:
		e.u16(uint16(v))
	case uint32:
		e.u32(v)
	case int32:
		e.u32(uint32(v))
	case float32:
		e.u32(math.Float32bits(v))
	case bool:
		if v {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(v)
	case uint64:
		e.u64(v)
	case int64:
		e.u64(uint64(v))
	case float64:
		e.u64(math.Float64bits(v))
	}
}

func (e *encoder) array(a Array) {
	e.u32(uint32(a.Elem))
	e.u64(uint64(a.Len()))
	switch v := a.Values.(type) {
	case []uint8:
		e.bytes(v)
	case []int8:
		each(v, func(x int8) { e.u8(uint8(x)) })
	case []uint16:
		each(v, e.u16)
	case []int16:
		each(v, func(x int16) { e.u16(uint16(x)) })
	case []uint32:
		each(v, e.u32)
	case []int32:
		each(v, func(x int32) { e.u32(uint32(x)) })
	case []float32:
		each(v, func(x float32) { e.u32(math.Float32bits(x)) })
	case []bool:
		each(v, func(x bool) { e.scalar(x) })
	case []string:
		each(v, e.str)
	case []uint64:
		each(v, e.u64)
	case []int64:
		each(v, func(x int64) { e.u64(uint64(x)) })
	case []float64:
		each(v, func(x float64) { e.u64(math.Float64bits(x)) })
	case []Array:
		each(v, e.array)
	}
}

func each[T any](v []T, f func(T)) {
	for _, x := range v {
		f(x)
	}
}

// WriteFile writes a version 3 file to path atomically: to a temporary file
// in the same directory, synced, then renamed over path.
func WriteFile(path string, md []KV, tensors []Tensor) error {
	if err := writeFile(path, md, tensors); err != nil {
		return fmt.Errorf("gguf: %s: %w", path, err)
	}
	return nil
}

func writeFile(path string, md []KV, tensors []Tensor) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp, 3, md, tensors); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
