package script

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// isolationScript touches every piece of a run's state: the random stream
// (manual_seed, rand, randint, dropout, and TinyJit replays that advance
// it), the training flag (dropout, BatchNorm's statistics, the optimizer
// refuses to step without it), the tensors marked for gradients and the
// losses backward() leaves for step(), and the engine (values read back).
// argv: seed, training (0 or 1).
const isolationScript = `seed = int(argv[0])
training = argv[1] == "1"
Tensor.manual_seed(seed)
net = struct(l1 = nn.Linear(12, 24), bn = nn.BatchNorm(24), l2 = nn.Linear(24, 4))
def forward(x):
    return net.l2(net.bn(net.l1(x)).relu().dropout(0.25))
x = Tensor.rand(8, 12).realize()
y = Tensor.randint(8, high=4)
opt = nn.optim.SGD(nn.state.get_parameters(net), lr=0.1, momentum=0.9)
Tensor.training = training
for i in range(3):
    loss = forward(x).sparse_categorical_crossentropy(y)
    if training:
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(i, Tensor.training, loss.item(), Tensor.rand(2).tolist())
noisy = TinyJit(lambda a: a * 2 + Tensor.rand(*a.shape))
for i in range(4):
    print("jit", noisy(Tensor.ones(3) * i).tolist())
print(net.bn.running_mean.tolist()[:4], Tensor.rand(1).item())
`

type isolationCase struct {
	device   string
	seed     int
	training bool
}

func (c isolationCase) String() string {
	return fmt.Sprintf("%s/seed%d/training%v", c.device, c.seed, c.training)
}

// runIsolated runs isolationScript in a context of its own on a new
// engine for c.device.
func runIsolated(t *testing.T, c isolationCase) string {
	t.Helper()
	ctx, _, err := realize.NewContext(c.device, realize.Options{})
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	var out bytes.Buffer
	training := "0"
	if c.training {
		training = "1"
	}
	err = Run(Options{File: "isolation.tg", Src: []byte(isolationScript), Stdout: &out, Context: ctx,
		Argv: []string{fmt.Sprint(c.seed), training}})
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	return out.String()
}

// TestScriptsInParallel: scripts run concurrently in one process, with
// different seeds, training flags and devices, print exactly what each
// prints when it runs alone. Every run makes its own tensor.Context; a
// piece of state shared between runs (a random stream, the training flag,
// a pending loss, an interned node realized on another device) would show
// as a different number. Run it under go test -race.
func TestScriptsInParallel(t *testing.T) {
	devices := []string{"GO"}
	for _, d := range []string{"CPU", "CL"} {
		if _, _, err := realize.NewContext(d, realize.Options{}); err == nil {
			devices = append(devices, d)
		}
	}
	var cases []isolationCase
	for _, d := range devices {
		for seed := 1; seed <= 2; seed++ {
			for _, tr := range []bool{false, true} {
				// CL: one case (PoCL compiles slowly when its cache is cold).
				if d != "CL" || seed == 2 && tr {
					cases = append(cases, isolationCase{d, seed, tr})
				}
			}
		}
	}
	alone := map[isolationCase]string{}
	for _, c := range cases {
		alone[c] = runIsolated(t, c)
	}
	// The cases must be told apart by their output, or a mix-up would
	// go unnoticed: seeds change every number, the flag changes the loss
	// (dropout) and the prints.
	for _, d := range devices {
		outs := map[string]isolationCase{}
		for _, c := range cases {
			if c.device != d {
				continue
			}
			if o, dup := outs[alone[c]]; dup {
				t.Fatalf("%s and %s print the same:\n%s", o, c, alone[c])
			}
			outs[alone[c]] = c
		}
	}
	if !strings.Contains(alone[cases[1]], "jit [") || !strings.Contains(alone[cases[1]], " True ") {
		t.Fatalf("unexpected output of %s:\n%s", cases[1], alone[cases[1]])
	}
	t.Run("group", func(t *testing.T) {
		for rep := range 2 {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/%d", c, rep), func(t *testing.T) {
					t.Parallel()
					if got := runIsolated(t, c); got != alone[c] {
						t.Errorf("in parallel:\n%s\nalone:\n%s", got, alone[c])
					}
				})
			}
		}
	})
}

// TestContextsDoNotMix: a tensor of one run used in another run's script
// is refused with an error, not computed with the other run's state.
func TestContextsDoNotMix(t *testing.T) {
	a, b := useGO(t), useGO(t)
	x := a.Full([]int{2}, 1, ir.Float32)
	_, err := Eval(b, "x + Tensor.ones(2)", map[string]*tensor.Tensor{"x": x})
	if err == nil || !strings.Contains(err.Error(), "different contexts") {
		t.Errorf("mixing contexts: err = %v", err)
	}
}
