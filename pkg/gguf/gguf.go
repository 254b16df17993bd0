// Package gguf reads and writes GGUF files (versions 2 and 3), the model
// format of llama.cpp and ggml:
//
//	"GGUF"  u32 version  u64 tensor_count  u64 metadata_kv_count
//	metadata: key (u64 length + bytes), u32 value type, value
//	          (arrays: u32 element type, u64 count, elements; nested allowed)
//	tensor infos: name, u32 n_dims, u64 dims[n_dims] (innermost first),
//	              u32 ggml type, u64 offset into the data section
//	padding to general.alignment (default 32), then the data section
//
// Open maps the file into memory: tensor data is read in place, never
// copied. Input is untrusted: every count and length read from the file is
// checked against the bytes that remain before anything is allocated from
// it, and every problem is an error of one line naming the file and the
// field.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"

	"tgc/pkg/fileaccess"
	"tgc/pkg/mmap"
	"tgc/pkg/quant"
)

// Magic starts every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the alignment of tensor data when the file does not
// set general.alignment.
const DefaultAlignment = 32

// AlignmentKey is the metadata key that sets the alignment (a uint32).
const AlignmentKey = "general.alignment"

// MaxDims is the most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
const MaxDims = 4

// maxNesting bounds arrays of arrays, so a hostile file cannot recurse deeply.
const maxNesting = 16

// Tensor is one tensor of a file.
type Tensor struct {
	Name string
	// Dims are in ggml's order: Dims[0] is the innermost (contiguous)
	// dimension. Shape gives them outermost first.
	Dims []int64
	Type quant.Type
	// Offset is where Data starts, counted from the start of the file.
	Offset int64
	// Data is the tensor's bytes. In a File from Open it aliases the
	// mapped file and is valid until Close.
	Data []byte
}

// Shape returns the dimensions outermost first (row-major, as PyTorch and
// tgc's Tensor API order them).
func (t *Tensor) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(s)-1-i] = int(d)
	}
	return s
}

// Elements returns the number of elements.
func (t *Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// File is a parsed GGUF file.
type File struct {
	// Name is the path the file was opened from, used in messages.
	Name      string
	Version   uint32
	Alignment int
	// Metadata and Tensors are in file order.
	Metadata []KV
	Tensors  []Tensor
	// DataOffset is where the data section starts.
	DataOffset int64

	keys    map[string]int
	tensors map[string]int
	unmap   func() error
}

// Open maps the file at path and parses it. The tensors' Data slices point
// into the mapping; Close releases it.
func Open(path string) (*File, error) {
	fd, err := fileaccess.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	return OpenFile(fd)
}

// OpenFile is Open for a file already open (through a script's file access
// policy); fd may be closed once it returns.
func OpenFile(fd *os.File) (*File, error) {
	path := fd.Name()
	b, unmap, err := mmap.MapFile(fd)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f, err := Parse(path, b)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}

// Close releases the file's memory. Tensor data must not be used after it.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap = nil
	return err
}

// Parse parses a GGUF file held in b; name is used in error messages. The
// tensors' Data slices alias b.
func Parse(name string, b []byte) (*File, error) {
	f, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", name, err)
	}
	f.Name = name
	return f, nil
}

// Lookup returns the value of a metadata key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.Metadata[i].Value, true
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// cursor reads little-endian fields from b, failing on truncation.
type cursor struct {
	b   []byte
	off int
}

func (c *cursor) rest() int { return len(c.b) - c.off }

// take returns the next n bytes.
func (c *cursor) take(n uint64, what string) ([]byte, error) {
	if n > uint64(c.rest()) {
		err := fmt.Errorf("truncated: needs %d bytes at offset %d, but the file has %d", n, c.off, len(c.b))
		if what != "" {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return nil, err
	}
	p := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return p, nil
}

func (c *cursor) u32(what string) (uint32, error) {
	p, err := c.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(p), nil
}

func (c *cursor) u64(what string) (uint64, error) {
	p, err := c.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(p), nil
}

func (c *cursor) str(what string) (string, error) {
	lenWhat := "length"
	if what != "" {
		lenWhat = what + " length"
	}
	n, err := c.u64(lenWhat)
	if err != nil {
		return "", err
	}
	p, err := c.take(n, what)
	if err != nil {
		return "", err
	}
	return string(p), nil
}

// count reads a u64 count of items of at least minSize bytes each and
// refuses one that the rest of the file cannot hold.
func (c *cursor) count(what string, minSize int) (int, error) {
	n, err := c.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(c.rest()/minSize) {
		return 0, fmt.Errorf("%s is %d, but the %d bytes left in the file hold at most %d", what, n, c.rest(), c.rest()/minSize)
	}
	return int(n), nil
}

func parse(b []byte) (*File, error) {
	c := &cursor{b: b}
	magic, err := c.take(4, "header magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("header: magic is %q, not %q: not a GGUF file", magic, Magic)
	}
	f := &File{keys: map[string]int{}, tensors: map[string]int{}}
	if f.Version, err = c.u32("header version"); err != nil {
		return nil, err
	}
	switch v := f.Version; {
	case v == 1:
		return nil, errors.New("header: GGUF version 1 is not supported (versions 2 and 3 are); convert the file with a current llama.cpp")
	case v != 2 && v != 3 && bits.ReverseBytes32(v) <= 3:
		return nil, fmt.Errorf("header: version %#x looks byte-swapped: big-endian GGUF files are not supported", v)
	case v != 2 && v != 3:
		return nil, fmt.Errorf("header: GGUF version %d is not supported (versions 2 and 3 are)", v)
	}
	// Counts are checked against the smallest encoding of each item: a
	// tensor info is at least 24 bytes, a key-value pair 13.
	nTensors, err := c.count("header tensor_count", 24)
	if err != nil {
		return nil, err
	}
	nKV, err := c.count("header metadata_kv_count", 13)
	if err != nil {
		return nil, err
	}

	f.Metadata = make([]KV, nKV)
	for i := range f.Metadata {
		kv := &f.Metadata[i]
		if kv.Key, err = c.str(fmt.Sprintf("metadata[%d] key", i)); err != nil {
			return nil, err
		}
		field := fmt.Sprintf("metadata[%d] %q", i, kv.Key)
		if _, dup := f.keys[kv.Key]; dup {
			return nil, fmt.Errorf("%s: duplicate key", field)
		}
		f.keys[kv.Key] = i
		t, err := c.u32(field + " type")
		if err != nil {
			return nil, err
		}
		if kv.Value, err = c.value(ValueType(t), field, 0); err != nil {
			return nil, err
		}
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.Lookup(AlignmentKey); ok {
		a, isU32 := v.Data.(uint32)
		switch {
		case !isU32:
			return nil, fmt.Errorf("metadata %q: has type %v, want uint32", AlignmentKey, v.Type)
		case a == 0 || a&(a-1) != 0:
			return nil, fmt.Errorf("metadata %q: %d is not a power of two", AlignmentKey, a)
		case a > 1<<30:
			return nil, fmt.Errorf("metadata %q: %d is too large", AlignmentKey, a)
		}
		f.Alignment = int(a)
	}

	f.Tensors = make([]Tensor, nTensors)
	rels, sizes := make([]int64, nTensors), make([]int64, nTensors)
	for i := range f.Tensors {
		if rels[i], sizes[i], err = c.tensorInfo(&f.Tensors[i], i); err != nil {
			return nil, err
		}
		name := f.Tensors[i].Name
		if _, dup := f.tensors[name]; dup {
			return nil, fmt.Errorf("tensor_infos[%d] %q: duplicate tensor name", i, name)
		}
		f.tensors[name] = i
	}

	// The data section starts at the next multiple of the alignment. A file
	// whose tensors are all empty may end before it.
	f.DataOffset = alignUp(int64(c.off), int64(f.Alignment))
	dataLen := max(int64(len(b))-f.DataOffset, 0)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		rel, size := rels[i], sizes[i]
		field := fmt.Sprintf("tensor %q", t.Name)
		switch {
		case rel%int64(f.Alignment) != 0:
			return nil, fmt.Errorf("%s: data offset %d is not a multiple of the alignment %d", field, rel, f.Alignment)
		case rel > dataLen || size > dataLen-rel:
			return nil, fmt.Errorf("%s: data [%d, %d) ends past the end of the file (the data section has %d bytes)", field, rel, rel+size, dataLen)
		}
		t.Offset = f.DataOffset + rel
		if size > 0 { // an empty tensor's offset may lie past a data section the file omits
			t.Data = b[t.Offset : t.Offset+size : t.Offset+size]
		}
	}
	if err := checkOverlaps(f.Tensors); err != nil {
		return nil, err
	}
	return f, nil
}

// tensorInfo reads one tensor info and returns its data's offset (relative
// to the data section) and size.
func (c *cursor) tensorInfo(t *Tensor, i int) (rel, size int64, err error) {
	if t.Name, err = c.str(fmt.Sprintf("tensor_infos[%d] name", i)); err != nil {
		return 0, 0, err
	}
	field := fmt.Sprintf("tensor_infos[%d] %q", i, t.Name)
	if t.Name == "" {
		return 0, 0, fmt.Errorf("%s: empty tensor name", field)
	}
	nDims, err := c.u32(field + " n_dims")
	if err != nil {
		return 0, 0, err
	}
	if nDims > MaxDims {
		return 0, 0, fmt.Errorf("%s: %d dimensions, at most %d are allowed", field, nDims, MaxDims)
	}
	t.Dims = make([]int64, nDims)
	n := uint64(1)
	for j := range t.Dims {
		d, err := c.u64(fmt.Sprintf("%s dims[%d]", field, j))
		if err != nil {
			return 0, 0, err
		}
		hi, lo := bits.Mul64(n, d)
		if d > math.MaxInt64 || hi != 0 || lo > math.MaxInt64 {
			return 0, 0, fmt.Errorf("%s: dims[%d] = %d overflows the element count", field, j, d)
		}
		t.Dims[j], n = int64(d), lo
	}
	typ, err := c.u32(field + " type")
	if err != nil {
		return 0, 0, err
	}
	t.Type = quant.Type(typ)
	if !t.Type.Supported() {
		return 0, 0, fmt.Errorf("%s: %w", field, quant.ErrUnsupported(t.Type))
	}
	off, err := c.u64(field + " offset")
	if err != nil {
		return 0, 0, err
	}
	if off > math.MaxInt64 {
		return 0, 0, fmt.Errorf("%s: offset %d is out of range", field, off)
	}
	size, err = byteSize(t.Type, t.Dims)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", field, err)
	}
	return int64(off), size, nil
}

// byteSize returns the bytes of a tensor of type t and dims (innermost
// first): whole blocks along dims[0], without overflow.
func byteSize(t quant.Type, dims []int64) (int64, error) {
	row, rows := int64(1), uint64(1)
	for i, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d", d)
		}
		if i == 0 {
			row = d
			continue
		}
		hi, lo := bits.Mul64(rows, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("dims %v overflow", dims)
		}
		rows = lo
	}
	rowBytes, err := t.RowBytes(row)
	if err != nil {
		return 0, fmt.Errorf("dims %v: %w", dims, err)
	}
	hi, size := bits.Mul64(uint64(rowBytes), rows)
	if hi != 0 || size > math.MaxInt64 {
		return 0, fmt.Errorf("%v%v: byte size overflows", t, dims)
	}
	return int64(size), nil
}

// checkOverlaps refuses tensors whose data share bytes.
func checkOverlaps(ts []Tensor) error {
	idx := make([]int, 0, len(ts))
	for i := range ts {
		if len(ts[i].Data) > 0 {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return ts[idx[a]].Offset < ts[idx[b]].Offset })
	for k := 1; k < len(idx); k++ {
		p, q := &ts[idx[k-1]], &ts[idx[k]]
		if q.Offset < p.Offset+int64(len(p.Data)) {
			return fmt.Errorf("tensor %q: data at file offset %d overlaps tensor %q", q.Name, q.Offset, p.Name)
		}
	}
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }
