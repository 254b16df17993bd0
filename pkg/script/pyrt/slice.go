package pyrt

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"
)

// Ellipsis is Python's Ellipsis (the translator turns ... into it).
type Ellipsis struct{}

func (Ellipsis) String() string        { return "Ellipsis" }
func (Ellipsis) Type() string          { return "ellipsis" }
func (Ellipsis) Freeze()               {}
func (Ellipsis) Truth() starlark.Bool  { return starlark.True }
func (Ellipsis) Hash() (uint32, error) { return 0x2e2e2e, nil }

// Slice is Python's slice(start, stop, step), made by the translator for
// subscripts like t[1:4, ::2].
type Slice struct{ Start, Stop, Step starlark.Value }

func (s Slice) String() string {
	return fmt.Sprintf("slice(%s, %s, %s)", s.Start, s.Stop, s.Step)
}
func (Slice) Type() string          { return "slice" }
func (Slice) Freeze()               {}
func (Slice) Truth() starlark.Bool  { return starlark.True }
func (Slice) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: slice") }

// MakeSlice is the builtin slice(start, stop, step).
func MakeSlice(c *Call) (starlark.Value, error) {
	s := Slice{starlark.None, starlark.None, starlark.None}
	if err := c.Unpack("start", &s.Start, "stop", &s.Stop, "step", &s.Step); err != nil {
		return nil, err
	}
	return s, nil
}

// SliceSequence is x[s] for a Starlark sequence (list, tuple, string).
func SliceSequence(x starlark.Value, s Slice) (starlark.Value, error) {
	seq, ok := x.(starlark.Sliceable)
	if !ok {
		return nil, fmt.Errorf("invalid slice operand %s", x.Type())
	}
	start, end, step, err := SliceIndices(s, seq.Len())
	if err != nil {
		return nil, err
	}
	return seq.Slice(start, end, step), nil
}

// SliceIndices normalizes a slice against a length the way Python does:
// the result selects start, start+step, ... while before end.
func SliceIndices(s Slice, n int) (start, end, step int, err error) {
	step = 1
	if s.Step != starlark.None {
		if step, err = sliceInt(s.Step); err != nil {
			return 0, 0, 0, fmt.Errorf("invalid slice step: %v", err)
		}
		if step == 0 {
			return 0, 0, 0, fmt.Errorf("slice step cannot be zero")
		}
	}
	index := func(v starlark.Value, def, lo, hi int) (int, error) {
		if v == starlark.None {
			return def, nil
		}
		i, err := sliceInt(v)
		if err != nil {
			return 0, fmt.Errorf("invalid slice index: %v", err)
		}
		if i < 0 {
			i += n
		}
		return min(max(i, lo), hi), nil
	}
	if step > 0 {
		if start, err = index(s.Start, 0, 0, n); err != nil {
			return
		}
		if end, err = index(s.Stop, n, 0, n); err != nil {
			return
		}
		end = max(end, start)
	} else {
		if start, err = index(s.Start, n-1, -1, n-1); err != nil {
			return
		}
		if end, err = index(s.Stop, -1, -1, n-1); err != nil {
			return
		}
		end = min(end, start)
	}
	return start, end, step, nil
}

// sliceInt converts a slice bound (an int or a bool) within int32.
func sliceInt(v starlark.Value) (int, error) {
	switch v := v.(type) {
	case starlark.Int:
		i, ok := v.Int64()
		if !ok || i > math.MaxInt32 || i < math.MinInt32 {
			return 0, fmt.Errorf("integer %s out of range", v)
		}
		return int(i), nil
	case starlark.Bool:
		if v {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("got %s, want int", v.Type())
}
