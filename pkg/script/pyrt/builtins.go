package pyrt

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Python builtins that Starlark lacks: sum, round, divmod, callable, map,
// filter (map and filter return lists).

// Sum is sum(iterable, start=0); it adds with +, so tensors sum too.
func Sum(c *Call) (starlark.Value, error) {
	var it starlark.Iterable
	var acc starlark.Value = starlark.MakeInt(0)
	if err := c.Unpack("iterable", &it, "start?", &acc); err != nil {
		return nil, err
	}
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		var err error
		if acc, err = starlark.Binary(syntax.PLUS, acc, x); err != nil {
			return nil, fmt.Errorf("sum: %v", err)
		}
	}
	return acc, nil
}

// Round is round(number, ndigits=None): halves to even, an int without
// ndigits.
func Round(c *Call) (starlark.Value, error) {
	var x, nd starlark.Value = nil, starlark.None
	if err := c.Unpack("number", &x, "ndigits?", &nd); err != nil {
		return nil, err
	}
	if i, ok := x.(starlark.Int); ok && nd == starlark.None {
		return i, nil
	}
	f, ok := starlark.AsFloat(x)
	if !ok {
		return nil, fmt.Errorf("round: got %s, want a number", x.Type())
	}
	if nd == starlark.None {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("round: cannot convert %v to an integer", f)
		}
		return starlark.NumberToInt(starlark.Float(math.RoundToEven(f)))
	}
	n, err := starlark.AsInt32(nd)
	if err != nil {
		return nil, fmt.Errorf("round: ndigits: %v", err)
	}
	p := math.Pow(10, float64(n))
	r := math.RoundToEven(f*p) / p
	if _, isInt := x.(starlark.Int); isInt {
		return starlark.NumberToInt(starlark.Float(r))
	}
	return starlark.Float(r), nil
}

// Divmod is divmod(a, b): (a // b, a % b).
func Divmod(c *Call) (starlark.Value, error) {
	var a, b starlark.Value
	if err := c.Unpack("a", &a, "b", &b); err != nil {
		return nil, err
	}
	q, err := starlark.Binary(syntax.SLASHSLASH, a, b)
	if err != nil {
		return nil, fmt.Errorf("divmod: %v", err)
	}
	r, err := starlark.Binary(syntax.PERCENT, a, b)
	if err != nil {
		return nil, fmt.Errorf("divmod: %v", err)
	}
	return starlark.Tuple{q, r}, nil
}

// IsCallable is callable(x).
func IsCallable(c *Call) (starlark.Value, error) {
	var x starlark.Value
	if err := c.Unpack("obj", &x); err != nil {
		return nil, err
	}
	if o, ok := x.(*Instance); ok {
		_, has := o.class.lookup("__call__")
		return starlark.Bool(has), nil
	}
	_, ok := x.(starlark.Callable)
	return starlark.Bool(ok), nil
}

// Map is map(function, *iterables) as a list.
func Map(c *Call) (starlark.Value, error) {
	if len(c.Args) < 2 || len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("map: want a function and one or more iterables")
	}
	var iters []starlark.Iterator
	for i, a := range c.Args[1:] {
		it, ok := a.(starlark.Iterable)
		if !ok {
			return nil, fmt.Errorf("map: argument %d is a %s, not iterable", i+2, a.Type())
		}
		iter := it.Iterate()
		defer iter.Done()
		iters = append(iters, iter)
	}
	var out []starlark.Value
	for {
		args := make(starlark.Tuple, len(iters))
		for i, it := range iters {
			if !it.Next(&args[i]) {
				return starlark.NewList(out), nil
			}
		}
		v, err := starlark.Call(c.Thread, c.Args[0], args, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// Filter is filter(function, iterable) as a list; a None function keeps
// the true elements.
func Filter(c *Call) (starlark.Value, error) {
	var fn starlark.Value
	var it starlark.Iterable
	if err := c.Unpack("function", &fn, "iterable", &it); err != nil {
		return nil, err
	}
	iter := it.Iterate()
	defer iter.Done()
	var out []starlark.Value
	var x starlark.Value
	for iter.Next(&x) {
		keep := x
		if fn != starlark.None {
			var err error
			if keep, err = starlark.Call(c.Thread, fn, starlark.Tuple{x}, nil); err != nil {
				return nil, err
			}
		}
		if tc, ok := keep.(truthChecker); ok {
			if err := tc.TruthError(); err != nil {
				return nil, err
			}
		}
		if keep.Truth() {
			out = append(out, x)
		}
	}
	return starlark.NewList(out), nil
}
