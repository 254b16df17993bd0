package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// raw builds a file from a literal header (unpadded) and data buffer.
func raw(header, data string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func f32s(v ...float32) []byte {
	var b []byte
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// equalTensors compares tensors by name, ignoring order; nil and empty shapes
// and data are equal.
func equalTensors(t *testing.T, got, want []Tensor) {
	t.Helper()
	sorted := func(ts []Tensor) []Tensor {
		ts = slices.Clone(ts)
		sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
		return ts
	}
	g, w := sorted(got), sorted(want)
	if len(g) != len(w) {
		t.Fatalf("got %d tensors, want %d", len(g), len(w))
	}
	for i := range g {
		if g[i].Name != w[i].Name || g[i].DType != w[i].DType ||
			!slices.Equal(g[i].Shape, w[i].Shape) || !bytes.Equal(g[i].Data, w[i].Data) {
			t.Errorf("tensor %d:\n got %+v\nwant %+v", i, g[i], w[i])
		}
	}
}

func equalMetadata(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("metadata = %v, want %v", got, want)
	}
	for k, v := range want {
		if gv, ok := got[k]; !ok || gv != v {
			t.Fatalf("metadata = %v, want %v", got, want)
		}
	}
}

func TestDTypeSize(t *testing.T) {
	for dtype, want := range map[string]int{"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1} {
		if got, ok := DTypeSize(dtype); !ok || got != want {
			t.Errorf("DTypeSize(%q) = %d, %v; want %d, true", dtype, got, ok, want)
		}
	}
	for _, dtype := range []string{"", "f32", "F4", "float32", "F32 "} {
		if _, ok := DTypeSize(dtype); ok {
			t.Errorf("DTypeSize(%q) ok, want unknown", dtype)
		}
	}
}

// TestEncodeByteExact checks the exact output, computed by hand.
func TestEncodeByteExact(t *testing.T) {
	tests := []struct {
		name     string
		tensors  []Tensor
		metadata map[string]string
		header   string // unpadded JSON
		pad      int    // spaces to reach a multiple of 8
		data     []byte
	}{
		{
			name:    "one F32 tensor [1, 2]",
			tensors: []Tensor{{Name: "x", DType: "F32", Shape: []int{2}, Data: f32s(1, 2)}},
			// 5 + 15 + 12 + 20 + 2 = 54 bytes, padded to 56.
			header: `{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
			pad:    2,
			// 1.0 = 0x3f800000 and 2.0 = 0x40000000, little-endian.
			data: []byte{0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40},
		},
		{
			name:   "empty file (same as the Rust reference)",
			header: `{}`,
			pad:    6,
		},
		{
			name:     "metadata only (same as the Rust reference)",
			metadata: map[string]string{"framework": "pt"},
			header:   `{"__metadata__":{"framework":"pt"}}`,
			pad:      5,
		},
		{
			name: "forced alignment (same as the Rust reference)",
			tensors: []Tensor{{Name: "attn0", DType: "F32", Shape: []int{1, 1, 2, 3},
				Data: f32s(0, 1, 2, 3, 4, 5)}},
			header: `{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}`,
			pad:    7,
			data:   f32s(0, 1, 2, 3, 4, 5),
		},
		{
			name: "two tensors laid out in name order, scalar shape, HTML chars kept",
			tensors: []Tensor{
				{Name: "b<&>", DType: "U8", Shape: []int{3}, Data: []byte{7, 8, 9}},
				{Name: "a", DType: "I16", Shape: nil, Data: []byte{0xff, 0x7f}},
			},
			header: `{"a":{"dtype":"I16","shape":[],"data_offsets":[0,2]},"b<&>":{"dtype":"U8","shape":[3],"data_offsets":[2,5]}}`,
			pad:    4,
			data:   []byte{0xff, 0x7f, 7, 8, 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (len(tt.header)+tt.pad)%8 != 0 {
				t.Fatalf("bad test: header %d + pad %d not a multiple of 8", len(tt.header), tt.pad)
			}
			want := raw(tt.header+strings.Repeat(" ", tt.pad), string(tt.data))
			got, err := Encode(tt.tensors, tt.metadata)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode:\n got %q\nwant %q", got, want)
			}
			tensors, md, err := Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			equalTensors(t, tensors, tt.tensors)
			equalMetadata(t, md, tt.metadata)
		})
	}
}

// TestDecodeReference decodes files as written by the reference
// implementation, including an old unaligned one.
func TestDecodeReference(t *testing.T) {
	b := raw(`{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`, strings.Repeat("\x00", 16))
	if b[0] != '<' { // 60, as in the Rust test
		t.Fatalf("header length byte = %d", b[0])
	}
	tensors, md, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if md != nil {
		t.Errorf("metadata = %v, want nil", md)
	}
	equalTensors(t, tensors, []Tensor{{Name: "test", DType: "I32", Shape: []int{2, 2}, Data: make([]byte, 16)}})
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		tensors  []Tensor
		metadata map[string]string
	}{
		{"nothing", nil, nil},
		{"empty metadata is dropped", nil, map[string]string{}},
		{"metadata", nil, map[string]string{"format": "pt", "": "", "quote\"\n": "ünïcode ✓"}},
		{"scalar", []Tensor{{Name: "s", DType: "F64", Shape: []int{}, Data: make([]byte, 8)}}, nil},
		{"zero-size tensors", []Tensor{
			{Name: "e1", DType: "F32", Shape: []int{0, 3}, Data: nil},
			{Name: "e2", DType: "I64", Shape: []int{5, 0}, Data: []byte{}},
			{Name: "x", DType: "U8", Shape: []int{1}, Data: []byte{42}},
		}, map[string]string{"k": "v"}},
		{"all dtypes", func() []Tensor {
			var ts []Tensor
			for _, d := range []string{"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"} {
				size, _ := DTypeSize(d)
				data := make([]byte, 2*3*size)
				for i := range data {
					data[i] = byte(i*7 + len(d))
				}
				ts = append(ts, Tensor{Name: "t." + d, DType: d, Shape: []int{2, 3}, Data: data})
			}
			return ts
		}(), map[string]string{"framework": "go"}},
		{"unicode and odd names", []Tensor{
			{Name: "名前", DType: "U8", Shape: []int{1}, Data: []byte{1}},
			{Name: `a"b\c`, DType: "U8", Shape: []int{1}, Data: []byte{2}},
			{Name: " ", DType: "U8", Shape: []int{1}, Data: []byte{3}},
			{Name: "__metadata", DType: "U8", Shape: []int{1}, Data: []byte{4}},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.tensors, tt.metadata)
			if err != nil {
				t.Fatal(err)
			}
			n := binary.LittleEndian.Uint64(b)
			if (8+n)%8 != 0 {
				t.Errorf("data starts at %d, not 8-byte aligned", 8+n)
			}
			if b[8] != '{' {
				t.Errorf("header starts with %q, want '{'", b[8])
			}
			tensors, md, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			equalTensors(t, tensors, tt.tensors)
			equalMetadata(t, md, tt.metadata)
			for i := 1; i < len(tensors); i++ {
				if tensors[i-1].Name >= tensors[i].Name {
					t.Errorf("tensors not in name (= offset) order: %q, %q", tensors[i-1].Name, tensors[i].Name)
				}
			}
			// Encoding is deterministic.
			b2, err := Encode(tensors, md)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, b2) {
				t.Errorf("re-encoding differs:\n%q\n%q", b, b2)
			}
		})
	}
}

// TestDecodeOrderAndAliasing checks that tensors come back in offset order
// (not header order) and that their Data aliases the input without letting an
// append spill into the neighbouring tensor.
func TestDecodeOrderAndAliasing(t *testing.T) {
	b := raw(`{"z":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},`+
		`"e":{"dtype":"U8","shape":[0],"data_offsets":[3,3]},`+
		`"a":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, "\x01\x02\x03")
	tensors, _, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tn := range tensors {
		names = append(names, tn.Name)
	}
	if want := []string{"z", "a", "e"}; !slices.Equal(names, want) {
		t.Fatalf("order = %v, want %v", names, want)
	}
	if &tensors[0].Data[0] != &b[len(b)-3] {
		t.Error("Data does not alias the input")
	}
	_ = append(tensors[0].Data, 99)
	if b[len(b)-1] != 3 {
		t.Error("append to one tensor's Data overwrote the next")
	}
}

func TestDecodeErrors(t *testing.T) {
	const okEntry = `"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}`
	hugeLen := binary.LittleEndian.AppendUint64(nil, math.MaxUint64)
	tests := []struct {
		name string
		in   []byte
		want []string // substrings the error must contain
	}{
		{"empty", nil, []string{"0 bytes", "shorter than the 8-byte"}},
		{"7 bytes", []byte("1234567"), []string{"7 bytes"}},
		{"header length huge", append(hugeLen, "{}"...), []string{"header length 18446744073709551615 exceeds limit"}},
		{"header length over MaxHeaderSize", binary.LittleEndian.AppendUint64(nil, MaxHeaderSize+1), []string{"exceeds limit"}},
		{"header length past end", append(binary.LittleEndian.AppendUint64(nil, 3), "{}"...), []string{"header length 3 exceeds the 2 bytes"}},
		{"empty header", raw("", ""), []string{"not valid JSON"}},
		{"invalid JSON", raw(`{"x" 1}`, ""), []string{"not valid JSON"}},
		{"invalid JSON in entry", raw(`{"x":{"dtype" "U8"}}`, ""), []string{"not valid JSON", `tensor "x"`}},
		{"truncated JSON", raw(`{"x":`, ""), []string{"not valid JSON", `tensor "x"`, "unexpected EOF"}},
		{"truncated entry", raw(`{"x":{"dtype":`, ""), []string{"not valid JSON", `tensor "x"`, "unexpected EOF"}},
		{"truncated metadata", raw(`{"__metadata__":{"a":`, ""), []string{"__metadata__: header is not valid JSON", "unexpected EOF"}},
		{"truncated after key", raw(`{"x"`, ""), []string{"not valid JSON", "unexpected EOF"}},
		{"invalid UTF-8", raw("{\"\xff\":{}}", ""), []string{"not valid UTF-8"}},
		{"not an object", raw(`[1,2]`, ""), []string{"not a JSON object"}},
		{"string header", raw(`"x"`, ""), []string{"not a JSON object"}},
		{"trailing data", raw(`{} {}`, ""), []string{"trailing data"}},
		{"unterminated object", raw(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`, ""), []string{"not valid JSON"}},
		{"entry not an object", raw(`{"x":5}`, ""), []string{`tensor "x"`, "bad header entry"}},
		{"entry null", raw(`{"x":null}`, ""), []string{`tensor "x"`, "missing dtype"}},
		{"missing shape", raw(`{"x":{"dtype":"U8","data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "missing shape"}},
		{"missing offsets", raw(`{"x":{"dtype":"U8","shape":[0]}}`, ""), []string{`tensor "x"`, "missing data_offsets"}},
		{"unknown dtype", raw(`{"x":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, "\x00"), []string{`tensor "x"`, `unknown dtype "F4"`}},
		{"dtype not a string", raw(`{"x":{"dtype":4,"shape":[2],"data_offsets":[0,1]}}`, "\x00"), []string{`tensor "x"`, "bad header entry"}},
		{"negative dim", raw(`{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "negative dimension"}},
		{"fractional dim", raw(`{"x":{"dtype":"U8","shape":[1.5],"data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "bad header entry"}},
		{"null dim", raw(`{"x":{"dtype":"U8","shape":[2,null],"data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "shape[1] is null"}},
		{"dim overflows int", raw(`{"x":{"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "bad header entry"}},
		{"numel overflow", raw(`{"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "element count overflows"}},
		{"numel overflow before a zero dim", raw(`{"x":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "element count overflows"}},
		{"byte size overflow", raw(`{"x":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}}`, ""), []string{`tensor "x"`, "byte size overflows"}},
		{"one offset", raw(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[0]}}`, ""), []string{`tensor "x"`, "2 elements, got 1"}},
		{"three offsets", raw(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[0,0,0]}}`, ""), []string{`tensor "x"`, "2 elements, got 3"}},
		{"null offset", raw(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[null,1]}}`, "\x00"), []string{`tensor "x"`, "data_offsets[0] is null"}},
		{"offsets not a list", raw(`{"x":{"dtype":"U8","shape":[1],"data_offsets":"0,1"}}`, "\x00"), []string{`tensor "x"`, "bad header entry"}},
		{"negative offset", raw(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}`, "\x00"), []string{`tensor "x"`, "negative data_offsets"}},
		{"begin > end", raw(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}`, "\x00"), []string{`tensor "x"`, "begin > end"}},
		{"end past buffer", raw(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, "\x00"), []string{`tensor "x"`, "exceed byte buffer of 1 bytes"}},
		{"huge end", raw(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,9223372036854775807]}}`, "\x00"), []string{`tensor "x"`, "exceed byte buffer"}},
		{"length mismatch", raw(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, "\x00\x00\x00\x00"), []string{`tensor "x"`, "span 4 bytes, but F32[2] needs 8"}},
		{"overlap", raw(`{`+okEntry+`,"y":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, "\x00\x00\x00"), []string{`tensor "y"`, `overlap tensor "x"`}},
		{"same range twice", raw(`{`+okEntry+`,"y":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, "\x00\x00"), []string{"overlap"}},
		{"hole at start", raw(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, "\x00\x00"), []string{`tensor "x"`, "hole", "[0, 1)"}},
		{"hole in middle", raw(`{`+okEntry+`,"y":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}}`, "\x00\x00\x00\x00"), []string{`tensor "y"`, "hole", "[2, 3)"}},
		{"trailing bytes", raw(`{`+okEntry+`}`, "\x00\x00\x00"), []string{"3 bytes but tensors cover only 2"}},
		{"data but no tensors", raw(`{}`, "\x00"), []string{"1 bytes but tensors cover only 0"}},
		{"duplicate name", raw(`{`+okEntry+`,`+okEntry+`}`, "\x00\x00"), []string{`duplicate entry "x"`}},
		{"duplicate metadata", raw(`{"__metadata__":{},"__metadata__":{}}`, ""), []string{`duplicate entry "__metadata__"`}},
		{"empty name", raw(`{"":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, ""), []string{"empty tensor name"}},
		{"metadata not an object", raw(`{"__metadata__":[]}`, ""), []string{"__metadata__: must map strings to strings"}},
		{"metadata null", raw(`{"__metadata__":null}`, ""), []string{"__metadata__: must be an object"}},
		{"metadata number value", raw(`{"__metadata__":{"k":1}}`, ""), []string{"__metadata__: must map strings to strings"}},
		{"metadata nested value", raw(`{"__metadata__":{"k":{"a":"b"}}}`, ""), []string{"__metadata__: must map strings to strings"}},
		{"metadata null value", raw(`{"__metadata__":{"k":null}}`, ""), []string{`__metadata__["k"]: must be a string`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tensors, md, err := Decode(tt.in)
			if err == nil {
				t.Fatalf("Decode succeeded: %v %v", tensors, md)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			// ReadFile must agree and name the file.
			if len(tt.in) > 1<<20 {
				return
			}
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			if err := os.WriteFile(path, tt.in, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, ferr := ReadFile(path)
			if ferr == nil {
				t.Fatal("ReadFile succeeded")
			}
			if !strings.Contains(ferr.Error(), path) || !strings.Contains(ferr.Error(), tt.want[0]) {
				t.Errorf("ReadFile error %q should mention %q and %q", ferr, path, tt.want[0])
			}
		})
	}
}

func TestDecodeAcceptsLeniencies(t *testing.T) {
	// Unknown entry fields are ignored and whitespace is allowed, as in the
	// reference implementation.
	b := raw(" \n{ \"x\" : {\"dtype\":\"U8\", \"shape\":[1], \"data_offsets\":[0,1], \"extra\":true} }\t ", "\x05")
	tensors, _, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	equalTensors(t, tensors, []Tensor{{Name: "x", DType: "U8", Shape: []int{1}, Data: []byte{5}}})
}

func TestEncodeErrors(t *testing.T) {
	u8 := func(name string) Tensor { return Tensor{Name: name, DType: "U8", Shape: []int{1}, Data: []byte{0}} }
	tests := []struct {
		name     string
		tensors  []Tensor
		metadata map[string]string
		want     string
	}{
		{"empty name", []Tensor{u8("")}, nil, "empty name"},
		{"reserved name", []Tensor{u8("__metadata__")}, nil, `"__metadata__" is reserved`},
		{"duplicate", []Tensor{u8("a"), u8("b"), u8("a")}, nil, `duplicate tensor name "a"`},
		{"invalid UTF-8 name", []Tensor{u8("a\xff")}, nil, "not valid UTF-8"},
		{"invalid UTF-8 metadata", nil, map[string]string{"k": "\xff"}, `metadata "k": not valid UTF-8`},
		{"unknown dtype", []Tensor{{Name: "x", DType: "F128", Shape: []int{1}, Data: make([]byte, 16)}}, nil, `tensor "x": unknown dtype "F128"`},
		{"negative dim", []Tensor{{Name: "x", DType: "U8", Shape: []int{-2}, Data: nil}}, nil, `tensor "x": negative dimension`},
		{"overflow", []Tensor{{Name: "x", DType: "F32", Shape: []int{math.MaxInt / 2}, Data: nil}}, nil, `tensor "x": shape`},
		{"short data", []Tensor{{Name: "x", DType: "F32", Shape: []int{2, 2}, Data: make([]byte, 15)}}, nil, `tensor "x": data is 15 bytes, but F32[2 2] needs 16`},
		{"long data", []Tensor{{Name: "x", DType: "U8", Shape: []int{}, Data: make([]byte, 2)}}, nil, `tensor "x": data is 2 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Encode(tt.tensors, tt.metadata)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode error = %v, want one mentioning %q", err, tt.want)
			}
			path := filepath.Join(t.TempDir(), "out.safetensors")
			if err := WriteFile(path, tt.tensors, tt.metadata); err == nil {
				t.Fatal("WriteFile succeeded")
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
				t.Errorf("WriteFile left files behind: %v", entries)
			}
		})
	}
}

func TestWriteReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	tensors := []Tensor{
		{Name: "w", DType: "F32", Shape: []int{2, 2}, Data: f32s(1, 2, 3, 4)},
		{Name: "b", DType: "F16", Shape: []int{2}, Data: []byte{0x00, 0x3c, 0x00, 0xc0}},
	}
	md := map[string]string{"format": "pt"}
	if err := os.WriteFile(path, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, tensors, md); err != nil {
		t.Fatal(err)
	}
	got, gotMD, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	equalTensors(t, got, tensors)
	equalMetadata(t, gotMD, md)

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %v, want only the written file", entries)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want the replaced file's 0600", fi.Mode().Perm())
	}
	fresh := filepath.Join(dir, "new.safetensors")
	if err := WriteFile(fresh, tensors, md); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v, %v, want mode 0644", fi, err)
	}
	want, _ := Encode(tensors, md)
	if onDisk, _ := os.ReadFile(path); !bytes.Equal(onDisk, want) {
		t.Error("file contents differ from Encode output")
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := ReadFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: err = %v", err)
	}
	if _, _, err := ReadFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: err = %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "no-such-dir", "x"), nil, nil); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// TestReadFileChecksBeforeAllocating checks that lengths claimed by a file are
// validated against its real size before anything is allocated from them.
func TestReadFileChecksBeforeAllocating(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"claims MaxHeaderSize header": append(binary.LittleEndian.AppendUint64(nil, MaxHeaderSize), "{}"...),
		"claims huge tensor":          raw(`{"x":{"dtype":"U8","shape":[1000000000],"data_offsets":[0,1000000000]}}`, ""),
	}
	for name, content := range files {
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := ReadFile(path)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: ReadFile succeeded", name)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s: ReadFile allocated %d bytes before failing", name, alloc)
		}
	}
}
