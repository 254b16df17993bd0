package tensorlib

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"tgc/pkg/ir"
)

// TestNumpyPrint compares t.numpy()'s str and repr with what numpy 1.24
// prints (testdata/numpy_print.json, written by tools/numpyprint/gen.py
// with Debian's python3-numpy).
func TestNumpyPrint(t *testing.T) {
	b, err := os.ReadFile("testdata/numpy_print.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Name, DType, Str, Repr string
			Shape                  []int
			Values                 []string
		}
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	dtypes := map[string]ir.DType{"float32": ir.Float32, "float16": ir.Float16, "int32": ir.Int32,
		"uint8": ir.Uint8, "int8": ir.Int8, "bool": ir.Bool}
	for _, c := range golden.Cases {
		dt, ok := dtypes[c.DType]
		if !ok {
			t.Fatalf("%s: dtype %s", c.Name, c.DType)
		}
		vals := make([]float64, len(c.Values))
		for i, v := range c.Values {
			if vals[i], err = strconv.ParseFloat(v, 64); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
		}
		a := &ndarray{dt: dt, shape: c.Shape, vals: vals}
		if got := a.String(); got != c.Str {
			t.Errorf("%s: str\n got %s\nwant %s", c.Name, got, c.Str)
		}
		if got := a.Repr(); got != c.Repr {
			t.Errorf("%s: repr\n got %s\nwant %s", c.Name, got, c.Repr)
		}
	}
}
