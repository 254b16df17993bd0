package pyrt

import (
	"fmt"
	"math"

	starmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Math is the module math: Starlark's plus inf, nan and prod.
var Math = func() *Module {
	m := starlark.StringDict{}
	for k, v := range starmath.Module.Members {
		m[k] = v
	}
	m["inf"] = starlark.Float(math.Inf(1))
	m["nan"] = starlark.Float(math.NaN())
	m["prod"] = Builtin("prod", func(c *Call) (starlark.Value, error) {
		var it starlark.Iterable
		if err := c.Unpack("iterable", &it); err != nil {
			return nil, err
		}
		iter := it.Iterate()
		defer iter.Done()
		var p starlark.Value = starlark.MakeInt(1)
		var x starlark.Value
		for iter.Next(&x) {
			var err error
			if p, err = starlark.Binary(syntax.STAR, p, x); err != nil {
				return nil, fmt.Errorf("prod: %v", err)
			}
		}
		return p, nil
	})
	return NewModule("math", m)
}()
