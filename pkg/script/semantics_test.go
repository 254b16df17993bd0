package script

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tgc/pkg/realize"
	"tgc/pkg/safetensors"
)

// semanticsCases are the reproductions of issues 15 and 9 (the dtype rules
// of docs/language.md): each prints the same on every device.
var semanticsCases = []struct {
	name, src, want string
}{
	{"bool + is or", `a = Tensor([1.0, 1.0, -1.0]) > 0
b = Tensor([1.0, -1.0, -1.0]) > 0
print((a + b).cast(dtypes.int32).tolist(), (a + b).sum().item(), (a * b).cast(dtypes.int32).tolist(), (a - b).cast(dtypes.int32).tolist())`,
		"[1, 1, 0] 2 [1, 0, 0] [1, 1, 1]"},
	{"uint8 narrowed inside a kernel", `u = Tensor([250, 4], dtype=dtypes.uint8)
i = Tensor([100, -128], dtype=dtypes.int8)
print((u * 2).cast(dtypes.int32).tolist(), (i * 2 + 1).cast(dtypes.int32).tolist(), (-i).cast(dtypes.float32).tolist())`,
		"[244, 8] [-55, 1] [-100.0, -128.0]"},
	{"float16 rounds after every op", `a = Tensor([-3.697265625], dtype=dtypes.float16)
b = Tensor([-6.17578125], dtype=dtypes.float16)
print((a*b+a).item(), (a*b+a).float().item(), (a.float()*b.float()+a.float()).half().item())`,
		"19.125 19.125 19.140625"},
	{"stack and cat keep -0.0", `print(Tensor.stack(-Tensor([0.0]), Tensor([1.0])).tolist(), (-Tensor([0.0, 0.0])).cat(Tensor([-0.0])).tolist())`,
		"[[-0.0], [1.0]] [-0.0, -0.0, -0.0]"},
	{"integer division by zero is 0", `x = Tensor([7, -7])
z = Tensor([0, 0])
print((x // 0).tolist(), (x % 0).tolist(), x.idiv(0).tolist(), x.fmod(0).tolist(), (x // z).tolist(), (x % z).tolist(), (Tensor([7, 200], dtype=dtypes.uint8) // 0).tolist())`,
		"[0, 0] [0, 0] [0, 0] [0, 0] [0, 0] [0, 0] [0, 0]"},
	{"INT_MIN / -1 wraps", `x = Tensor([-2147483648, 5])
print((x // Tensor([-1, 1])).tolist(), (x % Tensor([-1, 3])).tolist(), x.idiv(Tensor([-1, -1])).tolist(), (x // -1).tolist(), (x % -1).tolist())`,
		"[-2147483648, 5] [0, 2] [-2147483648, -5] [-2147483648, -5] [0, 0]"},
	{"float to int saturates, NaN is 0", `x = Tensor([math.nan, 3e9, -3e9, 1e20, -2.7, 300.5, -math.inf])
print(x.cast(dtypes.int32).tolist(), x.cast(dtypes.uint8).tolist(), x.cast(dtypes.int8).tolist())`,
		"[0, 2147483647, -2147483648, 2147483647, -2, 300, -2147483648] [0, 255, 0, 255, 0, 255, 0] [0, 127, -128, 127, -2, 127, -128]"},
	{"argmax indices are int64 past 2^31-1 elements", `x = Tensor.arange(1<<16).reshape(1, 1<<16)
print(x.expand(1<<15, 1<<16).argmax().dtype, x.expand((1<<15)-1, 1<<16).argmax().dtype)`,
		"dtypes.int64 dtypes.int32"},
	{"int64 exactly", `x = Tensor([-(1<<63), (1<<63)-1, 1<<60], dtype=dtypes.int64)
print(x.tolist(), (x + 1).tolist(), (x * 2).tolist(), x.max().item(), (x // -1).tolist(), Tensor.full((1,), (1<<62)+1, dtype=dtypes.int64).tolist())`,
		"[-9223372036854775808, 9223372036854775807, 1152921504606846976] [-9223372036854775807, -9223372036854775808, 1152921504606846977] [0, -2, 2305843009213693952] 9223372036854775807 [-9223372036854775808, -9223372036854775807, -1152921504606846976] [4611686018427387905]"},
	{"uint64 is unsigned", `u = Tensor([(1<<64)-1, 1<<63, 5], dtype=dtypes.uint64)
print(u.tolist(), (u // 2).tolist(), (u > 5).tolist(), u.max().item(), u.min().item(), (u + 1).tolist(), u.cast(dtypes.float32).tolist())`,
		"[18446744073709551615, 9223372036854775808, 5] [9223372036854775807, 4611686018427387904, 2] [True, True, False] 18446744073709551615 5 [0, 9223372036854775809, 6] [1.8446744073709552e+19, 9.223372036854776e+18, 5.0]"},
	{"16- and 32-bit integers wrap", `print((Tensor([65535], dtype=dtypes.uint16) + 1).tolist(), (Tensor([32767], dtype=dtypes.int16) + 1).tolist(), (Tensor([0], dtype=dtypes.uint32) - 1).tolist(), (Tensor([60000], dtype=dtypes.uint16) * 3).cast(dtypes.int32).tolist(), (Tensor([4000000000], dtype=dtypes.uint32) // 3).tolist())`,
		"[0] [-32768] [4294967295] [48928] [1333333333]"},
	{"promotion and sum dtypes", `i8, u8 = Tensor([1], dtype=dtypes.int8), Tensor([1], dtype=dtypes.uint8)
print((i8 + u8).dtype, (Tensor([1], dtype=dtypes.uint32) + Tensor([1])).dtype, (Tensor([1], dtype=dtypes.half) + Tensor([1], dtype=dtypes.bfloat16)).dtype, u8.sum().dtype, Tensor([True]).sum().dtype, Tensor([200, 100], dtype=dtypes.uint8).sum().item())`,
		"dtypes.int16 dtypes.int64 dtypes.float32 dtypes.uint32 dtypes.int32 300"},
	{"bfloat16 rounds after every op", `b = Tensor([1.0234375], dtype=dtypes.bfloat16)
print((b*b+b).item(), (b.float()*b.float()+b.float()).bfloat16().item(), Tensor([1.0/3], dtype=dtypes.bfloat16).item(), (Tensor([1.5, 3.0], dtype=dtypes.bfloat16) / 3).tolist())`,
		"2.0625 2.078125 0.333984375 [0.5, 1.0]"},
	{"float64 keeps its precision", `d = Tensor([0.1, 1e300], dtype=dtypes.float64)
print((d * 3).tolist()[0], d.sqrt().tolist()[1], d.float().tolist()[1], (d[0] + 1e-18 == d[0]).item(), (Tensor([0.1], dtype=dtypes.float64) - Tensor([0.1]).double()).item())`,
		"0.30000000000000004 1e+150 +inf True -1.4901161138336505e-09"},
	{"bitcast reads the bits", `raw = Tensor([0x00, 0x3c, 0x00, 0xc0], dtype=dtypes.uint8).reshape(2, 2)
scales = (raw[:, 0].cast(dtypes.uint16) + raw[:, 1].cast(dtypes.uint16) * 256).bitcast(dtypes.float16)
print(scales.tolist(), Tensor([1.0]).bitcast(dtypes.int32).item(), Tensor([-1], dtype=dtypes.int8).bitcast(dtypes.uint8).item(), Tensor([1.0], dtype=dtypes.float64).bitcast(dtypes.uint64).item(), Tensor([0x3f80], dtype=dtypes.uint16).bitcast(dtypes.bfloat16).item(), (Tensor([2.5]) * 2).bitcast(dtypes.uint32).item())`,
		"[1.0, -2.0] 1065353216 255 4607182418800017408 1.0 1084227584"},
	{"bitcast of a realized tensor to another size reads its memory", `print(Tensor([1, 65536]).bitcast(dtypes.int16).tolist(), Tensor([0x00, 0x3c, 0x00, 0xc0], dtype=dtypes.uint8).bitcast(dtypes.float16).tolist())`,
		"[1, 0, 0, 1] [1.0, -2.0]"},
	{"shifts past the width", `x = Tensor([-1, 5, -2147483648])
print((x >> 31).tolist(), (Tensor([1, 3]) << 31).tolist(), (Tensor([200, 7], dtype=dtypes.uint8) >> 8).tolist(), (Tensor([-128, 127], dtype=dtypes.int8) >> 7).tolist())`,
		"[-1, 0, -1] [-2147483648, -2147483648] [0, 0] [-1, 0]"},
}

// semanticsErrors are values that no dtype rule turns into a number: each
// is an error naming the value and the dtype.
var semanticsErrors = []struct {
	name, src, want string
}{
	{"full out of range", "x = Tensor.full((2,), 1<<40)\n",
		"model.tg:1:12: full: 1099511627776 does not fit int32 (-2147483648 to 2147483647): use a wider dtype"},
	{"literal out of range", "x = Tensor([1<<40])\n", "does not fit in int32"},
	{"literal out of an explicit dtype", "x = Tensor([300], dtype=dtypes.uint8)\n", "Tensor: data[0] = 300 does not fit uint8 (0 to 255)"},
	{"operand out of range", "x = Tensor([1, 2], dtype=dtypes.uint8) + 300\n", "300 does not fit uint8 (0 to 255)"},
	{"full_like out of range", "x = Tensor([1], dtype=dtypes.int8).full_like(200)\n", "200 does not fit int8 (-128 to 127)"},
	{"bitcast of a computed tensor to another size", "x = (Tensor([1]) + 1).bitcast(dtypes.int16)\n", "bitcast: int32 is 4 bytes, int16 is 2"},
	{"bitwise ops promoted to a float", "x = Tensor([1], dtype=dtypes.int64) & Tensor([1], dtype=dtypes.uint64)\n",
		"and: needs bool or integer tensors, got int64 and uint64 (promoted to float16)"},
	{"uint64 literal past 2^64", "x = Tensor([1<<64], dtype=dtypes.uint64)\n", "does not fit uint64 (0 to 18446744073709551615)"},
	{"negative uint32 literal", "x = Tensor([-1], dtype=dtypes.uint32)\n", "does not fit uint32 (0 to 4294967295)"},
	{"int64 operand past its range", "x = Tensor([1], dtype=dtypes.int64) + (1<<63)\n", "9223372036854775808 does not fit int64"},
	{"size past 2^60", "x = Tensor.ones(1, 1, 1).expand(1<<30, 1<<30, 1<<30)\n",
		"model.tg:1:26: expand: shape (1073741824, 1073741824, 1073741824) has more than 2^60 elements"},
}

// TestSemanticsOnEveryDevice runs each case on GO, CPU and CL (CI has a
// compiler and PoCL) and compares the printed values exactly.
func TestSemanticsOnEveryDevice(t *testing.T) {
	for _, dev := range []string{"GO", "CPU", "CL"} {
		t.Run(dev, func(t *testing.T) {
			ctx, _, err := realize.NewContext(dev, realize.Options{})
			if err != nil {
				if dev == "GO" || os.Getenv("CI") != "" {
					t.Fatalf("%s device: %v", dev, err)
				}
				t.Skipf("device %s unavailable: %v", dev, err)
			}
			for _, c := range semanticsCases {
				out, _, err := run(t, ctx, c.src, 0)
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
					continue
				}
				if got := strings.TrimSpace(out); got != c.want {
					t.Errorf("%s:\n got  %s\n want %s", c.name, got, c.want)
				}
			}
		})
	}
}

func TestSemanticsErrors(t *testing.T) {
	ctx := useGO(t)
	for _, c := range semanticsErrors {
		_, _, err := run(t, ctx, c.src, 0)
		if err == nil || !strings.Contains(firstLine(err), c.want) {
			t.Errorf("%s: got %q, want an error containing %q", c.name, firstLine(err), c.want)
		}
	}
}

// memAvailable is MemAvailable of /proc/meminfo in bytes (0 if unknown).
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestArgmaxPast2To31: argmax over 2^31-2^16 elements of an expanded
// arange ("MOD mixes int64 and int32") and over 2^31 (-2147483648, now
// int64 indices), on the CPU: reduces over 2^31 elements that read no
// memory, a second or two each.
func TestArgmaxPast2To31(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	src := `x = Tensor.arange(1<<16).reshape(1, 1<<16)
print(x.expand((1<<15)-1, 1<<16).argmax().item(), x.expand(1<<15, 1<<16).argmax().item())
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "65535 65535" {
		t.Errorf("got %q, want \"65535 65535\"", got)
	}
}

// TestMoreThan2To31Elements: a 4 GiB uint8 tensor made by expand (the C
// loop counter was an int: SIGSEGV), on the CPU. It needs 4 GiB and a few
// seconds; skipped when memory is short.
func TestMoreThan2To31Elements(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if m := memAvailable(); m < 10<<30 {
		t.Skipf("needs 10 GiB of available memory, have %d MiB", m>>20)
	}
	ctx, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	src := `x = Tensor.ones(1, 1, dtype=dtypes.uint8).expand(1<<16, 1<<16).contiguous().realize()
print(x[65535, 65535].item(), x[0, 0].item(), x[40000].sum().item(), x[:, 65535].sum().item())
`
	want := "1 1 65536 65536"
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSafetensorsEveryDType: safe_save then safe_load keeps every dtype
// and its values, and the header names the dtype as the format does.
func TestSafetensorsEveryDType(t *testing.T) {
	ctx := useGO(t)
	path := filepath.Join(t.TempDir(), "all.safetensors")
	src := `vals = {
  "b": Tensor([True, False]), "i8": Tensor([-128, 127], dtype=dtypes.int8), "u8": Tensor([0, 255], dtype=dtypes.uint8),
  "i16": Tensor([-32768, 32767], dtype=dtypes.int16), "u16": Tensor([0, 65535], dtype=dtypes.uint16),
  "i32": Tensor([-2147483648, 2147483647]), "u32": Tensor([0, 4294967295], dtype=dtypes.uint32),
  "i64": Tensor([-(1<<63), (1<<63)-1], dtype=dtypes.int64), "u64": Tensor([0, (1<<64)-1], dtype=dtypes.uint64),
  "f16": Tensor([1.5, -65504.0], dtype=dtypes.float16), "bf16": Tensor([1.5, -3e38], dtype=dtypes.bfloat16),
  "f32": Tensor([1.5, 1e-45]), "f64": Tensor([0.1, 1e308], dtype=dtypes.float64),
}
nn.state.safe_save(vals, "` + path + `")
back = nn.state.safe_load("` + path + `")
for k in sorted(vals.keys()):
    print(k, back[k].dtype, back[k].tolist() == vals[k].tolist(), back[k].tolist())
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `b dtypes.bool True [True, False]
bf16 dtypes.bfloat16 True [1.5, -3.00405527047391e+38]
f16 dtypes.float16 True [1.5, -65504.0]
f32 dtypes.float32 True [1.5, 1.401298464324817e-45]
f64 dtypes.float64 True [0.1, 1e+308]
i16 dtypes.int16 True [-32768, 32767]
i32 dtypes.int32 True [-2147483648, 2147483647]
i64 dtypes.int64 True [-9223372036854775808, 9223372036854775807]
i8 dtypes.int8 True [-128, 127]
u16 dtypes.uint16 True [0, 65535]
u32 dtypes.uint32 True [0, 4294967295]
u64 dtypes.uint64 True [0, 18446744073709551615]
u8 dtypes.uint8 True [0, 255]
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	sts, _, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, st := range sts {
		names[st.Name] = st.DType
	}
	for k, dt := range map[string]string{"b": "BOOL", "bf16": "BF16", "f64": "F64", "u64": "U64", "i16": "I16", "u32": "U32"} {
		if names[k] != dt {
			t.Errorf("%s is stored as %q, want %q", k, names[k], dt)
		}
	}
}
