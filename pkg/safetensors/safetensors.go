// Package safetensors reads and writes the safetensors file format
// (https://github.com/huggingface/safetensors):
//
//	8 bytes  little-endian uint64 N, the header length
//	N bytes  JSON object: {"name": {"dtype": "F32", "shape": [2, 3],
//	         "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
//	rest     the byte buffer; data_offsets are relative to its start
//
// Input is untrusted: every problem is reported as an error, and nothing is
// allocated from a size read out of the file before it has been checked
// against the real file size.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"sort"
	"unicode/utf8"

	"tgc/pkg/fileaccess"
)

// MaxHeaderSize is the largest JSON header accepted or written. (The Rust
// reference implementation's limit is 100,000,000 bytes, slightly lower.)
const MaxHeaderSize = 100 << 20

const metadataKey = "__metadata__"

// Tensor is one named tensor. Data holds the raw little-endian elements in
// row-major order; len(Data) == numel(Shape) * DTypeSize(DType).
type Tensor struct {
	Name  string
	DType string // "F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", ...
	Shape []int
	Data  []byte
}

// dtypeSizes lists the whole-byte dtypes of the reference implementation.
// Its sub-byte types (F4, F6_*) are not supported.
var dtypeSizes = map[string]int{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1,
	"U64": 8, "U32": 4, "U16": 2, "U8": 1,
	"BOOL": 1, "C64": 8, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
}

// DTypeSize returns the size in bytes of one element of dtype, and whether
// dtype is known.
func DTypeSize(dtype string) (int, bool) {
	n, ok := dtypeSizes[dtype]
	return n, ok
}

// byteSize returns the number of data bytes a tensor of this dtype and shape
// needs, rejecting unknown dtypes, negative dimensions and overflow.
func byteSize(dtype string, shape []int) (int, error) {
	size, ok := DTypeSize(dtype)
	if !ok {
		return 0, fmt.Errorf("unknown dtype %q", dtype)
	}
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		// Like the reference implementation, an overflowing partial product
		// is an error even if a later dimension is 0.
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, fmt.Errorf("shape %v: element count overflows", shape)
		}
		n = lo
	}
	hi, lo := bits.Mul64(n, uint64(size))
	if hi != 0 || lo > math.MaxInt {
		return 0, fmt.Errorf("shape %v: byte size overflows", shape)
	}
	return int(lo), nil
}

// headerEntry is a tensor's JSON header entry. Pointers tell a missing field
// or null from a zero value (encoding/json would silently turn [2, null] into
// [2, 0]). Unknown fields are ignored, as the reference implementation does.
type headerEntry struct {
	DType       *string `json:"dtype"`
	Shape       *[]*int `json:"shape"`
	DataOffsets *[]*int `json:"data_offsets"`
}

// ints converts a decoded JSON integer array, rejecting null elements.
func ints(field string, p []*int) ([]int, error) {
	out := make([]int, len(p))
	for i, v := range p {
		if v == nil {
			return nil, fmt.Errorf("%s[%d] is null", field, i)
		}
		out[i] = *v
	}
	return out, nil
}

// span is a validated tensor whose data is buffer[begin:end].
type span struct {
	t          Tensor
	begin, end int
}

// parseHeader parses and validates the JSON header against a byte buffer of
// bufLen bytes. The returned spans are sorted by offset, cover the buffer
// exactly, and have nil Data.
func parseHeader(hdr []byte, bufLen int) ([]span, map[string]string, error) {
	// encoding/json would quietly replace bad bytes with U+FFFD; the
	// reference implementation rejects them.
	if !utf8.Valid(hdr) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if tok, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("header is not valid JSON: %w", noEOF(err))
	} else if tok != json.Delim('{') {
		return nil, nil, errors.New("header is not a JSON object")
	}

	var spans []span
	var metadata map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("header is not valid JSON: %w", noEOF(err))
		}
		name, ok := tok.(string)
		if !ok { // the Decoder reports non-string keys as errors; be safe anyway
			return nil, nil, errors.New("header has a non-string key")
		}
		// encoding/json silently keeps the last duplicate key; an ambiguous
		// file must be rejected instead.
		if seen[name] {
			return nil, nil, fmt.Errorf("duplicate entry %q in header", name)
		}
		seen[name] = true

		if name == metadataKey {
			if metadata, err = decodeMetadata(dec); err != nil {
				return nil, nil, err
			}
			continue
		}

		var e headerEntry
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", name, valueErr("bad header entry", err))
		}
		s, err := checkEntry(name, e, bufLen)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		spans = append(spans, s)
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, nil, fmt.Errorf("header is not valid JSON: %w", noEOF(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("header has trailing data after the JSON object")
	}

	// The format requires the tensors to tile the buffer exactly: no
	// overlaps (aliasing) and no holes (hidden data). Sorting by (begin, end)
	// puts empty tensors before a non-empty one at the same offset.
	sort.Slice(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.t.Name < b.t.Name
	})
	pos := 0
	for i, s := range spans {
		switch {
		case s.begin < pos:
			return nil, nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q", s.t.Name, s.begin, s.end, spans[i-1].t.Name)
		case s.begin > pos:
			return nil, nil, fmt.Errorf("tensor %q: hole in byte buffer: bytes [%d, %d) belong to no tensor", s.t.Name, pos, s.begin)
		}
		pos = s.end
	}
	if pos != bufLen {
		return nil, nil, fmt.Errorf("byte buffer has %d bytes but tensors cover only %d", bufLen, pos)
	}
	return spans, metadata, nil
}

// noEOF turns the io.EOF the json.Decoder reports for a header cut short
// before a value into the clearer io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// valueErr describes a failure to decode one header value, telling broken
// JSON apart from well-formed JSON of the wrong type.
func valueErr(what string, err error) error {
	var syntax *json.SyntaxError
	if err == io.EOF || err == io.ErrUnexpectedEOF || errors.As(err, &syntax) {
		return fmt.Errorf("header is not valid JSON: %w", noEOF(err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// decodeMetadata decodes the __metadata__ value, which must be an object of
// strings. Pointers catch nulls, which encoding/json would turn into "".
func decodeMetadata(dec *json.Decoder) (map[string]string, error) {
	var m map[string]*string
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", metadataKey, valueErr("must map strings to strings", err))
	}
	if m == nil {
		return nil, fmt.Errorf("%s: must be an object, not null", metadataKey)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v == nil {
			return nil, fmt.Errorf("%s[%q]: must be a string, not null", metadataKey, k)
		}
		out[k] = *v
	}
	return out, nil
}

// checkEntry validates one tensor's header entry.
func checkEntry(name string, e headerEntry, bufLen int) (span, error) {
	if name == "" {
		return span{}, errors.New("empty tensor name")
	}
	if e.DType == nil {
		return span{}, errors.New("missing dtype")
	}
	if e.Shape == nil {
		return span{}, errors.New("missing shape")
	}
	if e.DataOffsets == nil {
		return span{}, errors.New("missing data_offsets")
	}
	shape, err := ints("shape", *e.Shape)
	if err != nil {
		return span{}, err
	}
	off, err := ints("data_offsets", *e.DataOffsets)
	if err != nil {
		return span{}, err
	}
	n, err := byteSize(*e.DType, shape)
	if err != nil {
		return span{}, err
	}
	if len(off) != 2 {
		return span{}, fmt.Errorf("data_offsets must have 2 elements, got %d", len(off))
	}
	begin, end := off[0], off[1]
	switch {
	case begin < 0 || end < 0:
		return span{}, fmt.Errorf("negative data_offsets [%d, %d]", begin, end)
	case begin > end:
		return span{}, fmt.Errorf("data_offsets [%d, %d]: begin > end", begin, end)
	case end > bufLen:
		return span{}, fmt.Errorf("data_offsets [%d, %d] exceed byte buffer of %d bytes", begin, end, bufLen)
	case end-begin != n:
		return span{}, fmt.Errorf("data_offsets [%d, %d] span %d bytes, but %s%v needs %d", begin, end, end-begin, *e.DType, shape, n)
	}
	t := Tensor{Name: name, DType: *e.DType, Shape: shape}
	return span{t: t, begin: begin, end: end}, nil
}

// headerLen reads and checks the 8-byte header length of a file of fileSize
// bytes, before anything is allocated from it.
func headerLen(prefix []byte, fileSize int64) (int, error) {
	n := binary.LittleEndian.Uint64(prefix)
	if n > MaxHeaderSize {
		return 0, fmt.Errorf("header length %d exceeds limit of %d", n, MaxHeaderSize)
	}
	if n > uint64(fileSize-8) {
		return 0, fmt.Errorf("header length %d exceeds the %d bytes after the length prefix", n, fileSize-8)
	}
	return int(n), nil
}

// Decode parses a safetensors file held in b. Tensors are returned in order
// of their data offset; their Data slices alias b (capacity-limited, so
// appending to one never overwrites another). metadata is nil if the file has
// no __metadata__ entry.
func Decode(b []byte) (tensors []Tensor, metadata map[string]string, err error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("safetensors: file is %d bytes, shorter than the 8-byte length prefix", len(b))
	}
	n, err := headerLen(b[:8], int64(len(b)))
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	buf := b[8+n:]
	spans, metadata, err := parseHeader(b[8:8+n], len(buf))
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	return attach(spans, buf), metadata, nil
}

func attach(spans []span, buf []byte) []Tensor {
	tensors := make([]Tensor, len(spans))
	for i, s := range spans {
		tensors[i] = s.t
		tensors[i].Data = buf[s.begin:s.end:s.end]
	}
	return tensors
}

// ReadFile reads a safetensors file. It checks the header length against the
// file size before reading the header, and validates the header against the
// file size before reading (and allocating) the data.
func ReadFile(path string) ([]Tensor, map[string]string, error) {
	tensors, metadata, err := readFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return tensors, metadata, nil
}

func readFile(path string) ([]Tensor, map[string]string, error) {
	f, err := fileaccess.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return read(f)
}

// ReadOpen reads a safetensors file opened by the caller (a regular file:
// fileaccess.Open, or a script's policy). Errors name f.Name().
func ReadOpen(f *os.File) ([]Tensor, map[string]string, error) {
	tensors, metadata, err := read(f)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %s: %w", f.Name(), err)
	}
	return tensors, metadata, nil
}

func read(f *os.File) ([]Tensor, map[string]string, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, errors.New("not a regular file")
	}
	size := fi.Size()
	if size < 8 {
		return nil, nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte length prefix", size)
	}
	var prefix [8]byte
	if _, err := io.ReadFull(f, prefix[:]); err != nil {
		return nil, nil, fmt.Errorf("reading length prefix: %w", err)
	}
	n, err := headerLen(prefix[:], size)
	if err != nil {
		return nil, nil, err
	}
	bufLen64 := size - 8 - int64(n)
	if bufLen64 > math.MaxInt { // only possible on 32-bit platforms
		return nil, nil, fmt.Errorf("byte buffer of %d bytes is too large for this platform", bufLen64)
	}
	bufLen := int(bufLen64)

	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, nil, fmt.Errorf("reading header: %w", err)
	}
	spans, metadata, err := parseHeader(hdr, bufLen)
	if err != nil {
		return nil, nil, err
	}
	buf := make([]byte, bufLen)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, nil, fmt.Errorf("reading data: %w", err)
	}
	return attach(spans, buf), metadata, nil
}

// Encode serializes tensors and metadata (which may be nil) to the
// safetensors format. Tensors are laid out contiguously in name order, and
// the header is padded with spaces so the data starts 8-byte aligned, as the
// Python implementation does.
func Encode(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	b, err := encode(tensors, metadata)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return b, nil
}

// jsonEntry is the header entry as written. Shape must marshal as [] (not
// null) for scalars.
type jsonEntry struct {
	DType       string `json:"dtype"`
	Shape       []int  `json:"shape"`
	DataOffsets [2]int `json:"data_offsets"`
}

func encode(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	sorted := make([]*Tensor, len(tensors))
	for i := range tensors {
		sorted[i] = &tensors[i]
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	// A Go map marshals with sorted keys, so the header is deterministic.
	header := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		for k, v := range metadata {
			// encoding/json would silently replace invalid UTF-8.
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, fmt.Errorf("metadata %q: not valid UTF-8", k)
			}
		}
		header[metadataKey] = metadata
	}
	pos := 0
	for i, t := range sorted {
		switch {
		case t.Name == "":
			return nil, errors.New("tensor with empty name")
		case t.Name == metadataKey:
			return nil, fmt.Errorf("tensor name %q is reserved", t.Name)
		case !utf8.ValidString(t.Name):
			return nil, fmt.Errorf("tensor name %q is not valid UTF-8", t.Name)
		case i > 0 && sorted[i-1].Name == t.Name:
			return nil, fmt.Errorf("duplicate tensor name %q", t.Name)
		}
		n, err := byteSize(t.DType, t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if len(t.Data) != n {
			return nil, fmt.Errorf("tensor %q: data is %d bytes, but %s%v needs %d", t.Name, len(t.Data), t.DType, t.Shape, n)
		}
		if pos > math.MaxInt-n {
			return nil, errors.New("total data size overflows")
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = jsonEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int{pos, pos + n}}
		pos += n
	}

	var hdr bytes.Buffer
	enc := json.NewEncoder(&hdr)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(header); err != nil {
		return nil, fmt.Errorf("encoding header: %w", err)
	}
	hdr.Truncate(hdr.Len() - 1) // drop the Encoder's trailing newline
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	if hdr.Len() > MaxHeaderSize {
		return nil, fmt.Errorf("header is %d bytes, over the limit of %d", hdr.Len(), MaxHeaderSize)
	}
	if pos > math.MaxInt-8-hdr.Len() {
		return nil, errors.New("total file size overflows")
	}

	out := make([]byte, 8, 8+hdr.Len()+pos)
	binary.LittleEndian.PutUint64(out, uint64(hdr.Len()))
	out = append(out, hdr.Bytes()...)
	for _, t := range sorted {
		out = append(out, t.Data...)
	}
	return out, nil
}

// WriteFile encodes tensors and metadata and writes them to path atomically
// (fileaccess.WriteFile: a temporary file in the same folder, synced and
// renamed over path), so readers never see a partial file and a failed
// write leaves the old one. A path that is a FIFO or device is refused.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	b, err := Encode(tensors, metadata)
	if err != nil {
		return err
	}
	if err := fileaccess.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return nil
}
