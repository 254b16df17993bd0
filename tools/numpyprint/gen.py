#!/usr/bin/python3
"""Golden outputs of numpy's array printing for tgc's t.numpy().

Writes pkg/script/tensorlib/testdata/numpy_print.json: for each case the
dtype, shape and values of an array and what numpy prints for it, str(a)
(print) and repr(a). Values are Python reprs of float64 numbers the dtype
holds exactly ("nan" and "inf" included). Deterministic: each case has its own seeded RandomState.

Run from anywhere with Debian's numpy: /usr/bin/python3 tools/numpyprint/gen.py
"""

import json
import os
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "pkg", "script", "tensorlib", "testdata", "numpy_print.json")


def rng(name):
    return np.random.RandomState(zlib.crc32(name.encode()))


def case(name, a):
    vals = [repr(float(v)) for v in a.astype(np.float64).ravel()]
    return {"name": name, "dtype": str(a.dtype), "shape": list(a.shape), "values": vals,
            "str": str(a), "repr": repr(a)}


def main():
    cases = []
    f32 = np.float32
    for shape in [(5,), (3, 4), (2, 3, 4), (40,), (7, 13), (50, 40), (3, 400), (1100,), (2, 2, 300), (1,), (1, 1)]:
        n = "normal%s" % (shape,)
        cases.append(case(n, rng(n).randn(*shape).astype(f32)))
    n = "uniform256"
    cases.append(case(n, (rng(n).rand(8, 9) * 256).astype(f32)))
    n = "matmul-like"
    cases.append(case(n, (250 + rng(n).rand(20, 20) * 15).astype(f32)))
    for scale in [1e-5, 1e-3, 1e3, 1e7, 1e9, 1e20, 1e-30]:
        n = "scale%g" % scale
        cases.append(case(n, (rng(n).randn(6) * scale).astype(f32)))
    cases.append(case("mixed ratio", np.array([1e-3, 5.0, 2e3], dtype=f32)))
    cases.append(case("integral floats", np.array([1.0, 2.0, -3.0], dtype=f32)))
    cases.append(case("halves", np.array([0.5, 1.25, -0.125], dtype=f32)))
    cases.append(case("zeros", np.zeros((2, 3), dtype=f32)))
    cases.append(case("negative zero", np.array([-0.0, 1.5], dtype=f32)))
    cases.append(case("nan inf", np.array([np.nan, 1.5, np.inf, -np.inf], dtype=f32)))
    cases.append(case("only nan", np.array([np.nan, np.nan], dtype=f32)))
    cases.append(case("nine digits", np.array([0.012345679, 1.0], dtype=f32)))
    cases.append(case("thirds", (np.arange(1, 7, dtype=f32) / 3).reshape(2, 3)))
    n = "float16"
    cases.append(case(n, rng(n).randn(3, 4).astype(np.float16)))
    cases.append(case("float16 small", np.array([1e-3, 0.1, 1000.0], dtype=np.float16)))
    n = "int32"
    cases.append(case(n, rng(n).randint(-1000, 100000, size=(4, 5)).astype(np.int32)))
    cases.append(case("int32 big", np.arange(1500, dtype=np.int32).reshape(30, 50)))
    cases.append(case("arange", np.arange(6, dtype=np.int32).reshape(2, 3)))
    n = "uint8"
    cases.append(case(n, rng(n).randint(0, 256, size=(3, 8)).astype(np.uint8)))
    cases.append(case("int8", np.array([-128, 0, 127], dtype=np.int8)))
    cases.append(case("bool", np.array([[True, False], [False, False]])))
    cases.append(case("all true", np.array([True, True])))
    n = "bool big"
    cases.append(case(n, rng(n).rand(40, 30) > 0.5))
    for v, dt in [(2.5, f32), (1e-5, f32), (1e20, f32), (-0.1, f32), (3, np.int32), (True, np.bool_), (0.0, f32), (100.0, f32)]:
        cases.append(case("scalar %r %s" % (v, np.dtype(dt)), np.array(v, dtype=dt)))
    cases.append(case("empty", np.zeros((0,), dtype=f32)))
    cases.append(case("empty 2d", np.zeros((2, 0), dtype=np.int32)))
    with open(OUT, "w") as f:
        json.dump({"numpy": np.__version__, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
