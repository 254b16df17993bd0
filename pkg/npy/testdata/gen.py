# Regenerates the .npy files the tests read (Debian's python3-numpy):
#   /usr/bin/python3 pkg/npy/testdata/gen.py
# Each file holds arange(n) in a dtype and layout; the test checks the values.
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
def save(name, a):
    np.save(os.path.join(here, name + ".npy"), a)

for dt in ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]:
    save(dt, (np.arange(6) % 2 == 1) if dt == "bool" else np.arange(6).astype(dt).reshape(2, 3))
save("fortran", np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)))
save("bigendian", np.arange(6, dtype=">i4").reshape(3, 2))
save("scalar", np.array(7.5, dtype=np.float32))
save("empty", np.zeros((0, 3), dtype=np.float32))
