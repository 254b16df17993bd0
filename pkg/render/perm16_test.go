package render

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPerm16Compilers: tg_perm16(table, v) is table[v & 15] lane by lane,
// for any int32 lanes (negative ones too), compiled by gcc and by clang
// (each present), with AVX-512 (the permute builtins, which differ between
// them) where the host has it and without (the loop).
func TestPerm16Compilers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	vs := make([]int32, 64)
	for i := range vs {
		vs[i] = int32(r.Uint32())
	}
	vs[0], vs[1] = -1, -16
	var table [16]int
	for i := range table {
		table[i] = r.IntN(200) - 100
	}
	lits := make([]string, 16)
	for i, v := range table {
		lits[i] = strconv.Itoa(v)
	}
	src := cVecPrelude(16) + cPerm16Def + `
#include <stdio.h>
int main(void) {
  int in[64];
  if (fread(in, 4, 64, stdin) != 64) return 2;
  for (int i = 0; i < 64; i += 16) {
    tg_i16 v; __builtin_memcpy(&v, &in[i], sizeof v);
    tg_f16 f = tg_perm16(((tg_f16){` + strings.Join(lits, ",") + `}), v);
    for (int l = 0; l < 16; l++) printf("%g\n", f[l]);
  }
  return 0;
}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "p.c")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	binary.Write(&in, binary.LittleEndian, vs)
	ran := 0
	for _, cc := range []string{"gcc", "clang", "clang-15"} {
		path, err := exec.LookPath(cc)
		if err != nil {
			continue
		}
		for _, flags := range [][]string{{"-O2", "-march=native"}, {"-O2"}} {
			bin := filepath.Join(dir, cc+strconv.Itoa(len(flags)))
			if out, err := exec.Command(path, append(flags, "-o", bin, file)...).CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", cc, flags, err, out)
			}
			cmd := exec.Command(bin)
			cmd.Stdin = bytes.NewReader(in.Bytes())
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s %v: %v", cc, flags, err)
			}
			lines := strings.Fields(string(out))
			if len(lines) != len(vs) {
				t.Fatalf("%s %v: %d values, want %d", cc, flags, len(lines), len(vs))
			}
			for i, l := range lines {
				if want := strconv.Itoa(table[vs[i]&15]); l != want {
					t.Fatalf("%s %v: lane %d (v=%d) is %s, want %s", cc, flags, i, vs[i], l, want)
				}
			}
			ran++
		}
	}
	if ran == 0 {
		t.Skip("no gcc or clang")
	}
}
