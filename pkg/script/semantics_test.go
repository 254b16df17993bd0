package script

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"tgc/pkg/realize"
	"tgc/pkg/tensor"
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
	{"literal out of an explicit dtype", "x = Tensor([300], dtype=dtypes.uint8)\n", "element 0 = 300 does not fit uint8 (0 to 255)"},
	{"operand out of range", "x = Tensor([1, 2], dtype=dtypes.uint8) + 300\n", "300 does not fit uint8 (0 to 255)"},
	{"full_like out of range", "x = Tensor([1], dtype=dtypes.int8).full_like(200)\n", "200 does not fit int8 (-128 to 127)"},
	{"argmax past int32", "x = Tensor.arange(1<<16).reshape(1, 1<<16).expand(1<<15, 1<<16).argmax()\n",
		"argmax: dimension 0 of shape (2147483648,) has 2147483648 elements: int32 indices reach 2^31-1"},
	{"size past 2^60", "x = Tensor.ones(1, 1, 1).expand(1<<30, 1<<30, 1<<30)\n",
		"model.tg:1:26: expand: shape (1073741824, 1073741824, 1073741824) has more than 2^60 elements"},
}

// TestSemanticsOnEveryDevice runs each case on GO, CPU and CL (CI has a
// compiler and PoCL) and compares the printed values exactly.
func TestSemanticsOnEveryDevice(t *testing.T) {
	defer tensor.SetEngine(nil)
	for _, dev := range []string{"GO", "CPU", "CL"} {
		t.Run(dev, func(t *testing.T) {
			if err := realize.UseDevice(dev); err != nil {
				if dev == "GO" || os.Getenv("CI") != "" {
					t.Fatalf("%s device: %v", dev, err)
				}
				t.Skipf("device %s unavailable: %v", dev, err)
			}
			for _, c := range semanticsCases {
				out, _, err := run(t, c.src, 0)
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
	useGO(t)
	for _, c := range semanticsErrors {
		_, _, err := run(t, c.src, 0)
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

// TestMoreThan2To31Elements: a 4 GiB uint8 tensor made by expand (the C
// loop counter was an int: SIGSEGV), and an argmax over 2^31-2^16 elements
// ("MOD mixes int64 and int32"), on the CPU. It needs 4 GiB and a few
// seconds; skipped when memory is short. The argmax (a reduce over 2^31
// elements) runs with TGC_BIG_TESTS=1.
func TestMoreThan2To31Elements(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if m := memAvailable(); m < 10<<30 {
		t.Skipf("needs 10 GiB of available memory, have %d MiB", m>>20)
	}
	if err := realize.UseDevice("CPU"); err != nil {
		t.Skipf("CPU: %v", err)
	}
	defer tensor.SetEngine(nil)
	src := `x = Tensor.ones(1, 1, dtype=dtypes.uint8).expand(1<<16, 1<<16).contiguous().realize()
print(x[65535, 65535].item(), x[0, 0].item(), x[40000].sum().item(), x[:, 65535].sum().item())
`
	want := "1 1 65536 65536"
	if os.Getenv("TGC_BIG_TESTS") != "" {
		src += "print(Tensor.arange(1<<16).reshape(1, 1<<16).expand((1<<15)-1, 1<<16).argmax().item())\n"
		want += "\n65535"
	}
	out, _, err := run(t, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
