package onnx

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// wireError explains a protobuf decoding error by walking the bytes with
// the schema: the field path and byte offset where the data stops making
// sense ("graph.node[3].attribute[0] at byte 1234: truncated"). protobuf-go's
// own error names neither.
func wireError(data []byte, md protoreflect.MessageDescriptor, err error) string {
	if where := findBad(data, md, "", 0); where != "" {
		return where
	}
	return err.Error()
}

// findBad returns a description of the first malformed field in data (a
// message of type md starting at byte base of the file), or "".
func findBad(data []byte, md protoreflect.MessageDescriptor, path string, base int) string {
	counts := map[protowire.Number]int{}
	off := 0
	for off < len(data) {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return fmt.Sprintf("%s at byte %d: %s", orTop(path), base+off, protowire.ParseError(n))
		}
		fd := md.Fields().ByNumber(num)
		name := fmt.Sprintf("field %d", num)
		if fd != nil {
			name = string(fd.Name())
		}
		sub := join(path, name)
		if fd != nil && fd.Cardinality() == protoreflect.Repeated {
			sub = fmt.Sprintf("%s[%d]", sub, counts[num])
		}
		counts[num]++
		m := protowire.ConsumeFieldValue(num, typ, data[off+n:])
		if m < 0 {
			if fd != nil && fd.Kind() == protoreflect.MessageKind && typ == protowire.BytesType {
				// a message cut short: find the field inside where the data ends
				if l, k := protowire.ConsumeVarint(data[off+n:]); k > 0 {
					body := data[off+n+k:]
					if where := findBad(body, fd.Message(), sub, base+off+n+k); where != "" {
						return where
					}
					return fmt.Sprintf("%s at byte %d: truncated (%d bytes, the data ends after %d)", sub, base+off, l, len(body))
				}
			}
			return fmt.Sprintf("%s at byte %d: %s", sub, base+off, protowire.ParseError(m))
		}
		if fd != nil && fd.Kind() == protoreflect.MessageKind && typ == protowire.BytesType {
			body, k := protowire.ConsumeBytes(data[off+n:])
			if where := findBad(body, fd.Message(), sub, base+off+n+k-len(body)); where != "" {
				return where
			}
		}
		off += n + m
	}
	return ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}
