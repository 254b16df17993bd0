package script

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"tgc/pkg/tensor"
)

// runLimited runs src with a memory limit.
func runLimited(t *testing.T, ctx *tensor.Context, src string, limit uint64) error {
	t.Helper()
	var out bytes.Buffer
	return Run(Options{File: "model.tg", Src: []byte(src), Stdout: &out, Stderr: &out, MemoryLimit: limit, Context: ctx})
}

// A computation larger than the machine's memory is refused before
// anything is allocated, naming the tensor and where it was made.
func TestRealizeOutOfMemory(t *testing.T) {
	ctx := useGO(t)
	src := "x = Tensor.ones(46000, 46000)\nfor i in range(200):\n    x = (x + 1).contiguous()\nprint(x.sum().item())\n"
	_, _, err := run(t, ctx, src, 0)
	re := regexp.MustCompile(`^model\.tg:4:15: not enough memory: the tensor of shape \(46000, 46000\) \(float32\) made at model\.tg:3:\d+ needs 7\.9 GiB, this computation [0-9.]+ TiB in all, and [0-9.]+ [KMGT]iB is available$`)
	if err == nil || !re.MatchString(firstLine(err)) {
		t.Errorf("error %v, want %s", err, re)
	}
}

func TestValuesOutOfMemory(t *testing.T) {
	ctx := useGO(t)
	for _, tc := range []struct{ src, want string }{
		{"x = [1.0] * 1000\nt = Tensor(x)\n", "model.tg:2:5: Tensor: a list of 1000 numbers needs 23.4 KiB of memory, and "},
		{"t = Tensor.ones(10, 100)\nl = t.tolist()\n", "model.tg:2:7: tolist: the list of the 1000 elements of a tensor of shape (10, 100) needs 31.2 KiB of memory, and "},
		{"t = Tensor.ones(10, 100)\nl = t.numpy()\n", "model.tg:2:7: numpy: reading the tensor of shape (10, 100) (float32) needs 11.7 KiB of memory, and "},
	} {
		// The checks before allocating, alone: with a limit of 1000 bytes
		// the watchdog would stop the script wherever the parallel tests'
		// heap growth happened to pass it.
		var out bytes.Buffer
		err := Run(Options{File: "model.tg", Src: []byte(tc.src), Stdout: &out, Stderr: &out, MemoryLimit: 1000, noWatchdog: true, Context: ctx})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
}

// A script whose values grow past its limit stops at the line it reached.
func TestScriptOutOfMemory(t *testing.T) {
	err := runLimited(t, nil, "l = []\nfor i in range(100000000):\n    l.append([i, i])\n", 64<<20)
	re := regexp.MustCompile(`^model\.tg:[23]:\d+: the script ran out of memory: its values use more than its limit of 64\.0 MiB$`)
	if err == nil || !re.MatchString(firstLine(err)) {
		t.Errorf("error %v, want %s", err, re)
	}
}
