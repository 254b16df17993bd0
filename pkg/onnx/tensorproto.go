package onnx

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"tgc/pkg/fileaccess"
	"tgc/pkg/onnx/onnxpb"
)

// externalDir resolves the external data files of one model: locations are
// relative to the model's folder and may not leave it.
type externalDir struct {
	dir  string // "" when the model came from bytes (external data refused)
	open Opener // nil: fileaccess.Open
}

// Opener opens a file for reading: the model and its external data go
// through it (a script's file access policy, say).
type Opener func(path string) (*os.File, error)

// DecodeTensor decodes a serialized TensorProto (an ONNX test's input_0.pb)
// into its name and an array. External data is resolved relative to dir
// ("" refuses it).
func DecodeTensor(data []byte, dir string) (string, *Array, error) {
	var tp onnxpb.TensorProto
	if err := proto.Unmarshal(data, &tp); err != nil {
		return "", nil, fmt.Errorf("not a TensorProto: %s", wireError(data, (&tp).ProtoReflect().Descriptor(), err))
	}
	a, err := externalDir{dir: dir}.tensor(&tp)
	return tp.GetName(), a, err
}

// tensor decodes a TensorProto, checking every length before it allocates.
func (x externalDir) tensor(tp *onnxpb.TensorProto) (*Array, error) {
	typ := DataType(tp.GetDataType())
	if !typ.Numeric() {
		if typ == Undefined {
			return nil, fmt.Errorf("data_type is missing or UNDEFINED")
		}
		return nil, fmt.Errorf("data type %s is not supported", typ)
	}
	if tp.GetSegment() != nil {
		return nil, fmt.Errorf("segmented tensors are not supported")
	}
	dims := make([]int, len(tp.GetDims()))
	for i, d := range tp.GetDims() {
		if d < 0 || d > maxElements {
			return nil, fmt.Errorf("dimension %d is %d", i, d)
		}
		dims[i] = int(d)
	}
	n, err := numel(dims)
	if err != nil {
		return nil, err
	}
	size := n * typ.Size()
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		raw, err := x.read(tp, size)
		if err != nil {
			return nil, err
		}
		return &Array{Type: typ, Shape: dims, Data: raw}, nil
	}
	if raw := tp.GetRawData(); raw != nil {
		if len(raw) != size {
			return nil, fmt.Errorf("raw_data has %d bytes, %s of shape %v needs %d", len(raw), typ, dims, size)
		}
		return &Array{Type: typ, Shape: dims, Data: raw}, nil
	}
	// Typed fields: which one holds the values depends on the type.
	var count int
	switch typ {
	case Float:
		count = len(tp.GetFloatData())
	case Double:
		count = len(tp.GetDoubleData())
	case Int64:
		count = len(tp.GetInt64Data())
	case Uint32, Uint64:
		count = len(tp.GetUint64Data())
	default: // int32, int16, int8, uint16, uint8, bool, float16, bfloat16
		count = len(tp.GetInt32Data())
	}
	if count != n {
		return nil, fmt.Errorf("%s data has %d values, shape %v needs %d", typ, count, dims, n)
	}
	a := &Array{Type: typ, Shape: dims, Data: make([]byte, size)}
	for i := range n {
		switch typ {
		case Float:
			binary.LittleEndian.PutUint32(a.Data[4*i:], math.Float32bits(tp.FloatData[i]))
		case Double:
			binary.LittleEndian.PutUint64(a.Data[8*i:], math.Float64bits(tp.DoubleData[i]))
		case Int64:
			a.SetInt(i, tp.Int64Data[i])
		case Uint32, Uint64:
			a.SetInt(i, int64(tp.Uint64Data[i]))
		case Float16, BFloat16: // the bits, in the low half of an int32
			binary.LittleEndian.PutUint16(a.Data[2*i:], uint16(tp.Int32Data[i]))
		default:
			a.SetInt(i, int64(tp.Int32Data[i]))
		}
	}
	return a, nil
}

// read returns the size bytes an external tensor's location, offset and
// length name, after checking them against the file.
func (x externalDir) read(tp *onnxpb.TensorProto, size int) ([]byte, error) {
	var loc string
	offset, length := int64(0), int64(-1)
	for _, kv := range tp.GetExternalData() {
		var err error
		switch kv.GetKey() {
		case "location":
			loc = kv.GetValue()
		case "offset":
			offset, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		}
		if err != nil || offset < 0 {
			return nil, fmt.Errorf("external_data %s is %q, not a byte count", kv.GetKey(), kv.GetValue())
		}
	}
	if loc == "" {
		return nil, fmt.Errorf("external data without a location")
	}
	if x.dir == "" {
		return nil, fmt.Errorf("external data %q: the model was not read from a file", loc)
	}
	if filepath.IsAbs(loc) || !filepath.IsLocal(filepath.FromSlash(loc)) || strings.ContainsRune(loc, 0) {
		return nil, fmt.Errorf("external data location %q must be a path inside the model's folder", loc)
	}
	if length >= 0 && length != int64(size) {
		return nil, fmt.Errorf("external data %q: length %d, the tensor needs %d bytes", loc, length, size)
	}
	path := filepath.Join(x.dir, filepath.FromSlash(loc))
	open := x.open
	if open == nil {
		open = fileaccess.Open
	}
	f, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	if offset > st.Size() || st.Size()-offset < int64(size) {
		return nil, fmt.Errorf("external data %s: %d bytes at offset %d are past its end (%d bytes)", path, size, offset, st.Size())
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		return nil, fmt.Errorf("external data %s: %w", path, err)
	}
	return buf, nil
}
