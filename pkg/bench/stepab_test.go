package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tgc/pkg/generate"
	"tgc/pkg/quant"
	"tgc/pkg/realize"
)

// TestStepAB (TGC_STEP_AB=q8_0 and TGC_STEP_CFGS="A=1,TGC_NOBATCH=1;...") alternates
// configurations step by step in one process. XXX experiment
func TestStepAB(t *testing.T) {
	typ := os.Getenv("TGC_STEP_AB")
	if typ == "" {
		t.Skip("TGC_STEP_AB unset")
	}
	qt := map[string]quant.Type{"q8_0": quant.Q8_0, "f16": quant.F16, "f32": quant.F32, "q4_k": quant.Q4_K}[typ]
	cfgs := strings.Split(os.Getenv("TGC_STEP_CFGS"), ";")
	ctx, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skip(err)
	}
	s, err := openLlama(ctx, qt)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := s.Prefill(promptIDs(llamaPosition))
	if err != nil {
		t.Fatal(err)
	}
	tok, pos := generate.Argmax(logits), llamaPosition
	set := func(cfg string) {
		for _, kv := range strings.Split(cfg, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				os.Setenv(k, v)
			}
		}
	}
	unset := func(cfg string) {
		for _, kv := range strings.Split(cfg, ",") {
			if k, _, ok := strings.Cut(kv, "="); ok {
				os.Unsetenv(k)
			}
		}
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("TGC_STEP_N")); err == nil {
		n = v
	}
	walls := make([][]time.Duration, len(cfgs))
	cpus := make([]time.Duration, len(cfgs))
	for i := range n + 2 {
		c := i % len(cfgs)
		set(cfgs[c])
		t0, c0 := time.Now(), cpu()
		logits, err := s.Decode(tok, pos)
		if err != nil {
			t.Fatal(err)
		}
		dt, dc := time.Since(t0), cpu()-c0
		unset(cfgs[c])
		tok, pos = generate.Argmax(logits), pos+1
		if pos >= s.Context-1 {
			pos = llamaPosition
		}
		if i >= len(cfgs)*2 {
			walls[c] = append(walls[c], dt)
			cpus[c] += dc
		}
	}
	for c, w := range walls {
		slices.Sort(w)
		var sum time.Duration
		for _, d := range w {
			sum += d
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
		fmt.Printf("%-40s steps %d min %s p10 %s p25 %s median %s mean %s ms, CPU %s ms/step\n", cfgs[c], len(w), ms(w[0]), ms(w[len(w)/10]), ms(w[len(w)/4]), ms(w[len(w)/2]), ms(sum/time.Duration(len(w))), ms(cpus[c]/time.Duration(len(w))))
	}
}
