package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tgc/models"
	"tgc/pkg/backend"
	"tgc/pkg/bench"
	"tgc/pkg/fileaccess"
	"tgc/pkg/generate"
	"tgc/pkg/realize"
	"tgc/pkg/sysmem"
)

// defaultGenerateSeed makes two runs without --seed print the same text.
const defaultGenerateSeed = 42

func newGenerateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "generate MODEL",
		Short: "Generate text with a LLaMA model (GGUF or llama2.c checkpoint)",
		Long: `Generate runs a LLaMA-family model, read from a GGUF file or a llama2.c
checkpoint, through models/llama.tg: the prompt as one batch, then one decode
step per new token (compiled once, replayed at every position). Text streams
to stdout as it is produced (the same bytes on a terminal or a pipe). A final
line on stderr gives the prompt tokens, prefill and decode tokens/s, and the
weight bytes read per token as GB/s and as a fraction of the machine's read
bandwidth (measured in the same run).

The tokenizer is the GGUF file's own, or --tokenizer (llama2.c's
tokenizer.bin, or a GGUF file); without one, give --prompt-ids and --ids.
--temperature 0 is greedy; otherwise temperature and top-p sampling from
--seed (default ` + strconv.Itoa(defaultGenerateSeed) + `, so two runs print the same text).
--kv-cache f16 (or bf16) keeps the keys and values in half the memory of
the default f32, rounded to 16 bits as llama.cpp's default cache does.`,
		Example: `  tgc generate stories15M.bin --tokenizer tokenizer.bin --prompt "Once upon a time" -n 256
  tgc generate model.gguf --prompt "The capital of France is" -n 64 --temperature 0
  tgc generate model.gguf --prompt-file p.txt --temperature 0.8 --top-p 0.9 --seed 42
  tgc generate stories260K.bin --prompt-ids 1 -n 200 --ids
  tgc generate model.gguf --prompt-file long.txt --context 8192 --kv-cache f16
  DEBUG=2 tgc generate model.gguf -n 16`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{err: fmt.Errorf("want one model file (usage: %s)", c.UseLine()), cmd: c}
			}
			return nil
		},
		RunE: runGenerate,
	}
	addDeviceFlag(c, "device to run on (default: the best available, see tgc devices)")
	addScriptFlags(c)
	f := c.Flags()
	f.String("tokenizer", "", "tokenizer file: llama2.c's tokenizer.bin or a GGUF file (default: the model's own)")
	f.String("prompt", "", "prompt text")
	f.String("prompt-file", "", "read the prompt text from this file")
	f.String("prompt-ids", "", "prompt as token ids, e.g. 1,450,7483 (default: BOS)")
	f.IntP("steps", "n", 256, "tokens to generate (stops early at the end of the context)")
	f.Float64("temperature", 0.8, "sampling temperature; 0 is greedy (argmax)")
	f.Float64("top-p", 0.9, "nucleus sampling: sample among the most likely tokens whose probability reaches this")
	f.Int("top-k", 0, "sample among the k most likely tokens only (0: all), before top-p")
	f.Bool("ids", false, "print token ids instead of text")
	f.Int("context", 0, fmt.Sprintf("positions of the KV cache (default: the model's context length, at most %d)", defaultContext))
	f.String("kv-cache", "f32", "the KV cache's element type: "+strings.Join(generate.KVCacheTypes(), ", ")+" (f16 and bf16: half the memory, rounded)")
	f.String("script", "", "the model script (default: the built-in models/llama.tg)")
	return c
}

type generateFlags struct {
	model, tokenizer, script string
	kvCache                  string
	prompt                   string
	promptIDs                []int
	hasText, hasIDs          bool
	steps, context           int
	temperature, topP        float64
	topK                     int
	ids                      bool
}

func readGenerateFlags(c *cobra.Command, model string) (*generateFlags, error) {
	f := c.Flags()
	bad := func(format string, args ...any) error { return &usageError{err: fmt.Errorf(format, args...), cmd: c} }
	g := &generateFlags{model: model}
	g.tokenizer, _ = f.GetString("tokenizer")
	g.script, _ = f.GetString("script")
	g.steps, _ = f.GetInt("steps")
	g.context, _ = f.GetInt("context")
	g.kvCache, _ = f.GetString("kv-cache")
	g.temperature, _ = f.GetFloat64("temperature")
	g.topP, _ = f.GetFloat64("top-p")
	g.topK, _ = f.GetInt("top-k")
	g.ids, _ = f.GetBool("ids")
	prompt, _ := f.GetString("prompt")
	promptFile, _ := f.GetString("prompt-file")
	promptIDs, _ := f.GetString("prompt-ids")
	given := 0
	for _, name := range []string{"prompt", "prompt-file", "prompt-ids"} {
		if f.Changed(name) {
			given++
		}
	}
	switch {
	case given > 1:
		return nil, bad("give one of --prompt, --prompt-file and --prompt-ids")
	case g.steps < 1:
		return nil, bad("-n must be at least 1, got %d", g.steps)
	case g.context < 0:
		return nil, bad("--context must not be negative, got %d", g.context)
	case !slices.Contains(generate.KVCacheTypes(), g.kvCache):
		return nil, bad("--kv-cache %q: want one of %s", g.kvCache, strings.Join(generate.KVCacheTypes(), ", "))
	}
	switch {
	case f.Changed("prompt"):
		g.prompt, g.hasText = prompt, true
	case f.Changed("prompt-file"):
		b, err := fileaccess.ReadFile(promptFile, 16<<20)
		if err != nil {
			return nil, fmt.Errorf("prompt file: %v", err)
		}
		g.prompt, g.hasText = string(b), true
	case f.Changed("prompt-ids"):
		for _, s := range strings.FieldsFunc(promptIDs, func(r rune) bool { return r == ',' || r == ' ' }) {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return nil, bad("--prompt-ids: %q is not a token id", s)
			}
			g.promptIDs = append(g.promptIDs, n)
		}
		if len(g.promptIDs) == 0 {
			return nil, bad("--prompt-ids: no ids given")
		}
		g.hasIDs = true
	}
	return g, nil
}

// defaultContext bounds the KV cache when --context is not given, as
// llama.cpp's default n_ctx does: Llama 3.1 and 3.2 files say 131072
// positions, whose cache (16 layers of 8 heads of 64: 8.6 GB in float32)
// and a long prompt's attention scratch (sized by the context) no small
// machine holds. --context asks for more.
const defaultContext = 4096

// moreContext tells how to get a longer context where the model has one.
func moreContext(s *generate.Session) string {
	if s.Context < s.ModelContext {
		return fmt.Sprintf("; the model was trained for %d: --context sets the cache's positions", s.ModelContext)
	}
	return ""
}

// decodeGCPercent is the decode's GOGC: a replayed step makes ~75 KB of
// garbage over a live heap of 2–3 MB (the logits and the sampler's
// buffers are reused), a collection every ~8 steps; GOGC 100 there held
// 5–6 MB more through a long generation, whose cache is then full
// (docs/llama.md). (Before Session.WarmUp the jitted step compiled here
// too, beside a cache that holds the prompt: after 900 tokens, GOGC 100
// there held the heap at 52 MB, 1.51× the weights and cache against
// 1.36×.)
const decodeGCPercent = 25

func runGenerate(c *cobra.Command, args []string) error {
	// The prompt's schedules compile at the runtime's default pace while
	// the KV cache is mostly unwritten: their garbage over a live heap of
	// ~16 MB (GOGC 25 doubled the start-up there: 3.0 against 1.5 s for a
	// Q4_K 110M's one-token prompt). The decode step compiles with them: a
	// longer prompt's first token runs as that step first (Session.WarmUp).
	// Once the cache holds the prompt, the decode runs at decodeGCPercent.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	g, err := readGenerateFlags(c, args[0])
	if err != nil {
		return err
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	device := cfg.RunDevice()
	if !slices.Contains(backend.Names(), device) {
		return fmt.Errorf("device %s can only be emitted, not run; devices that run: %s", device, strings.Join(backend.Names(), ", "))
	}
	seed := uint64(defaultGenerateSeed)
	if cfg.SeedSet {
		seed = cfg.Seed
	}
	sampler, err := generate.NewSampler(g.temperature, g.topP, g.topK, seed)
	if err != nil {
		return &usageError{err: err, cmd: c}
	}
	src, name := []byte(nil), g.script
	if g.script == "" {
		if src, err = models.Script("llama.tg"); err != nil {
			return err
		}
		name = "llama.tg"
	} else if src, err = fileaccess.ReadFile(g.script, 16<<20); err != nil {
		return fmt.Errorf("script: %v", err)
	}
	files, err := scriptFiles(cfg, g.script)
	if err != nil {
		return err
	}
	for _, p := range []string{g.model, g.tokenizer} { // the files named on the command line
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		if err := files.Allow(p, "named on the command line"); err != nil {
			return err
		}
	}
	var readBW float64
	if !cfg.Quiet && hostMemory(device) {
		// The read bandwidth for the final line: measured once a week per
		// host and kept in the cache directory (bench.HostReadBandwidth;
		// measuring takes ~1 s). A measurement runs before the model is
		// loaded, over a buffer of at most 128 MiB (tgc bench's reference
		// reads up to 1 GiB, past every cache): the buffer is unmapped
		// before the weights arrive, and the run's peak memory stays the
		// model's. Where a core's cache holds part of 128 MiB (a Zen 5's L3
		// pair: 64 MiB) this figure can read high; docs/llama.md. A GPU's
		// weights are in its own memory: the host's figure says nothing
		// of them, and the line gives GB/s alone.
		gbps, saved := bench.HostReadBandwidth(cfg.Cache, min(bench.ReadBufferBytes(backend.Host()), generateReadBuffer))
		readBW = gbps * 1e9
		if !saved {
			debug.FreeOSMemory()
		}
	}
	opts := engineOptions(cfg, stderr, useColor(stderr, cfg.NoColor))
	// The compiler's garbage goes back to the system before a compiled
	// step runs: a prompt's scratch does not add to it (docs/llama.md).
	// A step's compile allocates ~200 MB; a KV cache's fill under 1 MB.
	opts.ReleaseAfterCompile = 64 << 20
	ctx, eng, err := realize.NewContext(device, opts)
	if err != nil {
		return err
	}
	maxContext := g.context
	if maxContext == 0 {
		maxContext = defaultContext
	}
	kvCache := g.kvCache
	if kvCache == "f32" {
		kvCache = "" // the script's default: a --script whose load_model takes no kv_cache still runs
	}
	s, err := generate.Open(generate.Options{Model: g.model, Tokenizer: g.tokenizer, MaxContext: maxContext, KVCache: kvCache,
		Script: src, ScriptName: name, Context: ctx, Files: files, Stdout: stdout, Stderr: stderr})
	if err != nil {
		return err
	}
	defer s.Close()
	prompt := g.promptIDs
	switch {
	case g.hasText && s.Tok == nil:
		return fmt.Errorf("%s has no tokenizer: give --tokenizer, or --prompt-ids with --ids", filepath.Base(g.model))
	case g.hasText:
		prompt = s.Tok.Encode(g.prompt, s.Tok.AddBOS(), false) // BOS first if the vocabulary asks, as llama.cpp does
		if len(prompt) == 0 {
			return fmt.Errorf("the prompt is empty and %s adds no BOS token: give a prompt", filepath.Base(g.model))
		}
	case !g.hasIDs:
		prompt = []int{1} // BOS, as llama2.c starts
		if s.Tok != nil {
			if s.Tok.BOS() < 0 {
				return fmt.Errorf("%s has no BOS token to start from: give --prompt or --prompt-ids", filepath.Base(g.model))
			}
			prompt = []int{s.Tok.BOS()}
		}
	}
	if !g.ids && s.Tok == nil {
		return fmt.Errorf("%s has no tokenizer to print text with: give --tokenizer, or --ids", filepath.Base(g.model))
	}
	for _, id := range prompt {
		if id >= s.Vocab {
			return fmt.Errorf("--prompt-ids: token id %d is outside the vocabulary of %d", id, s.Vocab)
		}
	}
	if len(prompt) >= s.Context {
		return fmt.Errorf("%s: the prompt has %d tokens, more than the context of %d positions leaves room for (%d)%s", filepath.Base(g.model), len(prompt), s.Context, s.Context-1, moreContext(s))
	}
	out := &tokenWriter{w: stdout, ids: g.ids, s: s}
	if !g.ids {
		for i, id := range prompt {
			prev := -1
			if i > 0 {
				prev = prompt[i-1]
			}
			if err := out.text(prev, id); err != nil {
				return err
			}
		}
	}
	st := genStats{prompt: len(prompt), weightBytes: s.WeightBytes}
	start, compiling := time.Now(), eng.Stats.CompileTime+eng.Stats.LowerTime
	if len(prompt) > 1 && !s.Stepped(len(prompt)) {
		if err := s.WarmUp(prompt[0]); err != nil {
			return err
		}
	}
	logits, err := s.Prefill(prompt)
	if err != nil {
		return err
	}
	debug.SetGCPercent(decodeGCPercent)
	st.compile = eng.Stats.CompileTime + eng.Stats.LowerTime - compiling
	st.prefill = time.Since(start) - st.compile
	prev := prompt[len(prompt)-1]
	pos := len(prompt)
	stoppedAtContext := false
	for n := 0; n < g.steps; n++ {
		drawn := time.Now()
		next, err := sampler.Next(logits)
		if err != nil {
			return fmt.Errorf("%s: position %d: %w", filepath.Base(g.model), pos, err)
		}
		st.draw(time.Since(drawn))
		if s.Tok != nil && (next == s.Tok.EOS() || next == s.Tok.BOS()) {
			break
		}
		if err := out.token(prev, next); err != nil {
			return err
		}
		prev = next
		if n+1 == g.steps {
			break
		}
		if pos >= s.Context {
			stoppedAtContext = true
			break
		}
		t := time.Now()
		if logits, err = s.Decode(next, pos); err != nil {
			return err
		}
		st.step(time.Since(t))
		if n == 1 {
			// The step is captured and replays from now on: the flag
			// parsing, loading and compiling code is not run again, and
			// its pages (~5 MB of a Q4_K 110M's peak) go back to the
			// system; what the steps run comes back on first use. So do
			// the steps' scratch before the capture and the heap's free
			// pages (1.7 and 1.4 MB at a 900-token prompt's peak).
			_, _ = sysmem.ReleaseCodeForGood()
			s.ReleaseMemory()
		}
		pos++
	}
	out.end()
	if stoppedAtContext {
		fmt.Fprintf(stderr, "tgc: stopped after %d tokens: the context of %d positions is full (-n %d asked for more)%s\n", out.n, s.Context, g.steps, moreContext(s))
	}
	if !cfg.Quiet {
		st.readBW = readBW
		fmt.Fprintln(stderr, st.line(eng.Dev.Name()))
	}
	return nil
}

// tokenWriter streams tokens: text pieces, or ids separated by spaces.
type tokenWriter struct {
	w   io.Writer
	ids bool
	s   *generate.Session
	n   int // tokens written
}

func (t *tokenWriter) text(prev, id int) error {
	p, err := t.s.Tok.Piece(prev, id)
	if err != nil {
		return err
	}
	_, err = io.WriteString(t.w, p)
	return err
}

func (t *tokenWriter) token(prev, id int) error {
	t.n++
	if t.ids {
		sep := " "
		if t.n == 1 {
			sep = ""
		}
		_, err := fmt.Fprintf(t.w, "%s%d", sep, id)
		return err
	}
	return t.text(prev, id)
}

func (t *tokenWriter) end() { io.WriteString(t.w, "\n") }

// genStats times a generation. The first two decode steps compile and
// capture the step (TinyJit); the decode rate is measured after them when
// there are more.
type genStats struct {
	prompt      int
	prefill     time.Duration // without compile
	compile     time.Duration // scheduling and compiling the prefill
	steps       []time.Duration
	weightBytes int64
	readBW      float64 // bytes/s, measured in this run
	// the sampler's time, beside the steps' (a flat 32000-token draw at
	// --temperature 0.8 takes ~1 ms, a tenth of a 110M's step or more)
	sampling time.Duration
	draws    int
}

func (g *genStats) step(d time.Duration) { g.steps = append(g.steps, d) }

func (g *genStats) draw(d time.Duration) { g.sampling, g.draws = g.sampling+d, g.draws+1 }

func (g *genStats) line(device string) string {
	parts := []string{fmt.Sprintf("%s: prompt %d tokens", device, g.prompt),
		fmt.Sprintf("prefill %.1f tok/s (compile %s apart)", float64(g.prompt)/g.prefill.Seconds(), fmtDuration(g.compile))}
	steady := g.steps
	warm := ""
	if len(steady) > 2 {
		steady, warm = steady[2:], ", after 2 warm-up steps"
	}
	if len(steady) > 0 {
		var total time.Duration
		for _, d := range steady {
			total += d
		}
		per := total.Seconds() / float64(len(steady))
		gbps := float64(g.weightBytes) / per / 1e9
		parts = append(parts, fmt.Sprintf("decode %.1f tok/s (%d tokens%s)", 1/per, len(steady), warm),
			fmt.Sprintf("weights %.3g GB/token = %.1f GB/s", float64(g.weightBytes)/1e9, gbps))
		if g.readBW > 0 {
			parts = append(parts, fmt.Sprintf("%.2f× the read bandwidth (%.1f GB/s)", gbps*1e9/g.readBW, g.readBW/1e9))
		}
	}
	if g.draws > 0 {
		parts = append(parts, fmt.Sprintf("sampling %s a token", fmtDuration(g.sampling/time.Duration(g.draws))))
	}
	return strings.Join(parts, ", ")
}

// generateReadBuffer bounds the buffer of the final line's read bandwidth
// (bench.ReadBufferBytes is up to 1 GiB): within the smallest model's peak
// memory, so that measuring does not raise it.
const generateReadBuffer = 128 << 20

// hostMemory says whether a device's buffers are the host's memory (CPU,
// GO), so that the host's read bandwidth bounds its decode.
func hostMemory(device string) bool { return device == "CPU" || device == "GO" }
