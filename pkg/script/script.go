// Package script runs .tg model scripts: Python-style code on Starlark
// (go.starlark.net) with a Tensor API that mirrors tinygrad's, so that
// tinygrad code runs as written. See docs/language.md.
//
// The work is split by job:
//
//	frontend   Python -> Starlark: the text translation, the AST rewrite, positions
//	pyrt       the Python runtime under the translation: calls, modules, slices, formatting
//	tensorlib  the Tensor value, class, methods, dtypes and TinyJit
//	nnlib      the module nn: layers, optimizers, nn.state, nn.datasets
//	script     a run (this package): the session, predeclared names, errors,
//	           tgc train's config/trange/report
//
// Every error becomes an *Error: "file.tg:LINE:COL: message" plus the
// script's call stack.
package script

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"tgc/pkg/fileaccess"
	"tgc/pkg/realize"
	"tgc/pkg/report"
	"tgc/pkg/script/frontend"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
)

// DefaultMaxSteps is the step limit when Options.MaxSteps is 0.
const DefaultMaxSteps = 100_000_000

// Options configures one run of a script.
type Options struct {
	File     string        // script path, used in positions and to read Src
	Src      []byte        // source; nil: read File
	Stdout   io.Writer     // print output; nil: os.Stdout
	Stderr   io.Writer     // warnings; nil: os.Stderr
	MaxSteps uint64        // Starlark step limit; 0: DefaultMaxSteps
	Argv     []string      // script arguments, visible as the list argv
	Train    *TrainSession // tgc train's session (RunTraining); nil: none
	// MemoryLimit bounds the memory of the script's values in bytes (0:
	// what the system has available); see memory.go.
	MemoryLimit uint64
	// noWatchdog keeps MemoryLimit for the checks made before an allocation
	// but runs no watchdog: it reads the whole process's heap, which tests
	// running in parallel grow (tests of those checks set it).
	noWatchdog bool
	// Context holds the run's tensors: their engine, the random stream,
	// the training flag (set to False when the run starts). nil: a new
	// context without an engine (values cannot be computed). Runs in
	// parallel need contexts of their own.
	Context *tensor.Context
	// Files is the file access of the script (safe_load, safe_save,
	// mnist(dir=...)); nil: fileaccess.ForScript(File), the script's folder
	// and the current folder.
	Files *fileaccess.Policy
}

// Error is a script error: where it happened, what, and the call stack.
type Error struct {
	Pos   tensor.Pos // innermost script position (File empty if unknown)
	Msg   string
	Stack []Frame // outermost call first; empty for syntax errors
}

// Frame is one entry of a script call stack.
type Frame struct {
	Func   string
	Pos    tensor.Pos
	Repeat int // the frame repeats this many more times (recursion)
	Hidden int // a gap: this many frames are not shown (Func is "")
}

func (e *Error) Error() string {
	var sb strings.Builder
	if p := e.Pos.String(); p != "" {
		sb.WriteString(p + ": ")
	}
	sb.WriteString(e.Msg)
	if len(e.Stack) > 0 {
		sb.WriteString("\nTraceback (most recent call last):")
		for _, f := range e.Stack {
			if f.Hidden > 0 {
				fmt.Fprintf(&sb, "\n  ... %d more calls ...", f.Hidden)
				continue
			}
			fmt.Fprintf(&sb, "\n  %s: in %s", f.Pos, f.Func)
			if f.Repeat > 0 {
				fmt.Fprintf(&sb, "\n  [the line above repeats %d more times]", f.Repeat)
			}
		}
	}
	return sb.String()
}

// interp is the state of one run, reachable from builtins via the thread.
type interp struct {
	ctx      *tensor.Context // the run's tensors (engine, random stream, training flag)
	thread   *starlark.Thread
	file     string
	pm       *frontend.PosMap
	stdout   io.Writer
	stderr   io.Writer
	maxSteps uint64
	stepsHit bool
	mem      memoryGuard    // memory.go
	warned   map[int32]bool // lines that already warned about a trace-mode read
	train    trainState     // config, report() and trange (train.go)
	argv     *starlark.List // the script's arguments
	counters starlark.Value // GlobalCounters
	imports  pyrt.Modules   // what import can bind
	files    *fileaccess.Policy
}

// interpOf is the run of a thread.
func interpOf(thread *starlark.Thread) *interp {
	in, _ := pyrt.HostOf(thread).(*interp)
	return in
}

// Run loads and executes a script.
func Run(opts Options) error {
	m, err := Load(opts)
	if m != nil {
		m.Close()
	}
	return err
}

// Module is a script that has run: its global names, and functions a Go
// driver calls (tgc generate calls models/llama.tg's load_model, prefill and
// decode). Close it when done.
type Module struct {
	Globals starlark.StringDict
	in      *interp
	restore func()
}

// Load runs a script for its definitions and keeps it for Call. On an
// error the module is nil.
func Load(opts Options) (_ *Module, err error) {
	src := opts.Src
	if src == nil {
		b, rerr := os.ReadFile(opts.File)
		if rerr != nil {
			return nil, &Error{Msg: fmt.Sprintf("cannot read script: %v", rerr)}
		}
		src = b
	}
	file := opts.File
	if file == "" {
		file = "<script>"
	}
	in := newInterp(opts.Context, file, opts.Stdout, opts.Stderr, opts.MaxSteps)
	if opts.Train != nil {
		in.train.sess = opts.Train
	}
	if in.files = opts.Files; in.files == nil {
		in.files = fileaccess.ForScript(opts.File)
	}
	restore := in.install()
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Pos: in.scriptPos(), Msg: in.InternalError(r)}
		}
		if err != nil {
			restore()
		}
	}()

	argv := make([]starlark.Value, len(opts.Argv))
	for i, a := range opts.Argv {
		argv[i] = starlark.String(a)
	}
	in.argv = starlark.NewList(argv)
	predeclared := in.predeclared()
	tr, terr := frontend.Options{Import: in.imports.Check}.Translate(src)
	if terr != nil {
		return nil, in.convert(terr)
	}
	in.pm = tr.Map
	f, perr := frontend.FileOptions.Parse(file, tr.Text, 0)
	if perr != nil {
		return nil, in.convert(perr)
	}
	if rerr := tr.Rewrite(f); rerr != nil {
		return nil, in.convert(rerr)
	}
	prog, cerr := starlark.FileProgram(f, predeclared.Has)
	if cerr != nil {
		return nil, in.convert(cerr)
	}
	stop := in.mem.watch(in.thread, opts.MemoryLimit, !opts.noWatchdog)
	globals, xerr := prog.Init(in.thread, predeclared)
	stop()
	if xerr != nil {
		return nil, in.convert(xerr)
	}
	return &Module{Globals: globals, in: in, restore: restore}, nil
}

// Close ends the run (the context's position hook points nowhere again).
func (m *Module) Close() {
	if m.restore != nil {
		m.restore()
		m.restore = nil
	}
}

// Call calls the script's global function name with args; errors are
// *Error with the script's positions.
func (m *Module) Call(name string, args ...starlark.Value) (starlark.Value, error) {
	return m.CallKw(name, args, nil)
}

// CallKw calls the script's function name with positional and keyword
// arguments.
func (m *Module) CallKw(name string, args starlark.Tuple, kwargs []starlark.Tuple) (_ starlark.Value, err error) {
	fn, ok := m.Globals[name].(starlark.Callable)
	if !ok {
		return nil, &Error{Msg: fmt.Sprintf("%s defines no function %s", m.in.file, name)}
	}
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Pos: m.in.scriptPos(), Msg: m.in.InternalError(r)}
		}
	}()
	v, err := starlark.Call(m.in.thread, fn, args, kwargs)
	if err != nil {
		return nil, m.in.convert(err)
	}
	return v, nil
}

// CallValue calls a callable value the script returned (a TinyJit).
func (m *Module) CallValue(fn starlark.Value, args ...starlark.Value) (_ starlark.Value, err error) {
	f, ok := fn.(starlark.Callable)
	if !ok {
		return nil, &Error{Msg: fmt.Sprintf("%s is not callable", fn.Type())}
	}
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Pos: m.in.scriptPos(), Msg: m.in.InternalError(r)}
		}
	}()
	v, err := starlark.Call(m.in.thread, f, args, nil)
	if err != nil {
		return nil, m.in.convert(err)
	}
	return v, nil
}

// Eval evaluates one expression with the predeclared names plus env, in
// ctx (the reference test suite's entry point; nil: the context of env's
// tensors, or a new one without an engine). Its file name in errors is
// <expr>.
func Eval(ctx *tensor.Context, expr string, env map[string]*tensor.Tensor) (_ *tensor.Tensor, err error) {
	for _, t := range env {
		if ctx == nil {
			ctx = t.Context()
		}
	}
	in := newInterp(ctx, "<expr>", io.Discard, io.Discard, 0)
	restore := in.install()
	defer restore()
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Pos: in.scriptPos(), Msg: in.InternalError(r)}
		}
	}()

	tr, terr := frontend.Translate([]byte(expr))
	if terr != nil {
		return nil, in.convert(terr)
	}
	in.pm = tr.Map
	e, perr := frontend.FileOptions.ParseExpr("<expr>", tr.Text, 0)
	if perr != nil {
		return nil, in.convert(perr)
	}
	if e, perr = tr.RewriteExpr(e); perr != nil {
		return nil, in.convert(perr)
	}
	vars := in.predeclared()
	for name, t := range env {
		if t.Err() != nil {
			return nil, &Error{Msg: fmt.Sprintf("input %s: %v", name, t.Err())}
		}
		vars[name] = tensorlib.NewTensor(t)
	}
	v, xerr := starlark.EvalExprOptions(frontend.FileOptions, in.thread, e, vars)
	if xerr != nil {
		return nil, in.convert(xerr)
	}
	t, ok := v.(*tensorlib.Tensor)
	if !ok {
		return nil, &Error{Msg: fmt.Sprintf("expression gives %s, not a Tensor", v.Type())}
	}
	return t.Tensor(), nil
}

func newInterp(ctx *tensor.Context, file string, stdout, stderr io.Writer, maxSteps uint64) *interp {
	if ctx == nil {
		ctx = tensor.NewContext(nil)
	}
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	if maxSteps == 0 {
		maxSteps = DefaultMaxSteps
	}
	in := &interp{ctx: ctx, file: file, stdout: stdout, stderr: stderr, maxSteps: maxSteps, warned: map[int32]bool{},
		train: trainState{sess: &TrainSession{Recorder: report.NewRecorder()}},
		argv:  starlark.NewList(nil),
		counters: tensorlib.NewGlobalCounters(func() *realize.Engine {
			e, _ := ctx.Engine().(*realize.Engine)
			return e
		}),
		files: fileaccess.ForScript("")}
	th := &starlark.Thread{Name: file}
	th.Print = func(_ *starlark.Thread, msg string) { fmt.Fprintln(in.stdout, msg) }
	th.Load = func(_ *starlark.Thread, module string) (starlark.StringDict, error) {
		return nil, errors.New("load is not supported in .tg scripts")
	}
	th.SetMaxExecutionSteps(maxSteps)
	th.OnMaxSteps = func(th *starlark.Thread) {
		in.stepsHit = true
		th.Cancel("step limit")
	}
	pyrt.SetHost(th, in)
	in.thread = th
	return in
}

// install points the context's position hook at this run and returns the
// function that undoes it. Tensor.training starts False in every run.
func (in *interp) install() func() {
	in.ctx.SetPosFunc(in.scriptPos)
	in.ctx.SetTraining(false)
	return func() { in.ctx.SetPosFunc(nil) }
}

// Context is the tensor context of the run (tensorlib reaches it through
// the thread's host).
func (in *interp) Context() *tensor.Context { return in.ctx }

// scriptPos is the position of the innermost script frame: the call that is
// creating tensor nodes right now.
func (in *interp) scriptPos() tensor.Pos {
	th := in.thread
	for d := 0; d < th.CallStackDepth(); d++ {
		fr := th.CallFrame(d)
		if fr.Pos.Filename() != "<builtin>" {
			return in.pos(fr.Pos)
		}
	}
	return tensor.Pos{}
}

// pos converts a Starlark position of the preprocessed text to a position
// in the original source.
func (in *interp) pos(p syntax.Position) tensor.Pos {
	if !p.IsValid() {
		return tensor.Pos{}
	}
	line, col := p.Line, p.Col
	if p.Filename() == in.file {
		line, col = in.pm.Pos(p.Line, p.Col)
	}
	return tensor.Pos{File: p.Filename(), Line: int(line), Col: int(col)}
}

// convert turns any error of the Starlark toolchain into an *Error.
func (in *interp) convert(err error) error {
	var serr syntax.Error
	var rlist resolve.ErrorList
	var eerr *starlark.EvalError
	var terr *frontend.Error
	switch {
	case errors.As(err, &terr):
		return &Error{Pos: tensor.Pos{File: in.file, Line: terr.Line, Col: terr.Col}, Msg: terr.Msg}
	case errors.As(err, &eerr):
		return in.evalError(eerr)
	case errors.As(err, &serr):
		return &Error{Pos: in.pos(serr.Pos), Msg: syntaxMessage(serr.Msg)}
	case errors.As(err, &rlist) && len(rlist) > 0:
		e := &Error{Pos: in.pos(rlist[0].Pos), Msg: in.suggestName(rlist[0].Msg)}
		for _, r := range rlist[1:] {
			e.Msg += fmt.Sprintf("\n%s: %s", in.pos(r.Pos), in.suggestName(r.Msg))
		}
		return e
	}
	return &Error{Msg: err.Error()}
}

// syntaxMessage explains the parser's messages about Python that the
// frontend does not translate.
func syntaxMessage(msg string) string {
	if strings.Contains(msg, "does not associate with") {
		return "chained comparisons (a < b < c) are not supported: write a < b and b < c"
	}
	return msg
}

// suggestName adds the nearest predeclared or built-in name to the
// resolver's "undefined: x" errors.
func (in *interp) suggestName(msg string) string {
	name, ok := strings.CutPrefix(msg, "undefined: ")
	if !ok || strings.Contains(name, " ") {
		return msg
	}
	names := in.predeclared().Keys()
	names = append(names, starlark.Universe.Keys()...)
	if n := pyrt.Nearest(name, names); n != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", n)
	}
	return msg
}

func (in *interp) evalError(e *starlark.EvalError) *Error {
	out := &Error{Msg: e.Msg}
	for _, fr := range e.CallStack {
		if fr.Pos.Filename() == "<builtin>" {
			continue
		}
		out.Stack = append(out.Stack, Frame{Func: frontend.DisplayName(fr.Name), Pos: in.pos(fr.Pos)})
	}
	if n := len(out.Stack); n > 0 {
		out.Pos = out.Stack[n-1].Pos
	}
	out.Stack = shortStack(out.Stack)
	if strings.Contains(out.Msg, "Starlark stack overflow") {
		out.Msg = "recursion too deep: more than 100000 nested calls"
	}
	if msg := in.mem.stopped(); msg != "" {
		out.Msg = msg
	}
	if in.stepsHit {
		out.Msg = fmt.Sprintf("script exceeded the step limit of %d steps (raise it with --max-steps)", in.maxSteps)
	}
	if len(out.Stack) == 1 { // the position says it all
		out.Stack = nil
	}
	return out
}

// shortStack folds repeated frames (recursion) and keeps the first and last
// frames of a long stack.
func shortStack(st []Frame) []Frame {
	var out []Frame
	for _, f := range st {
		if n := len(out); n > 0 && out[n-1].Func == f.Func && out[n-1].Pos == f.Pos {
			out[n-1].Repeat++
			continue
		}
		out = append(out, f)
	}
	const keep = 12
	if len(out) > 2*keep {
		hidden := 0
		for _, f := range out[keep : len(out)-keep] {
			hidden += 1 + f.Repeat
		}
		out = append(append(out[:keep:keep], Frame{Hidden: hidden}), out[len(out)-keep:]...)
	}
	return out
}

// InternalError is the message for a Go panic; the Go stack goes to stderr
// only with TGC_PANIC_TRACE set.
func (in *interp) InternalError(r any) string {
	if os.Getenv("TGC_PANIC_TRACE") != "" {
		fmt.Fprintf(in.stderr, "panic: %v\n%s", r, debug.Stack())
	}
	return fmt.Sprintf("internal error: %v (this is a bug in tgc; please report it)", r)
}

// WarnTraceRead prints the trace-mode warning once per source line.
func (in *interp) WarnTraceRead() {
	in.Warnf("value read in trace mode: this tensor becomes an output of the plan and reads as zeros; control flow that depends on it is not traced")
}

// Warnf prints a warning at the current script position, once per line.
func (in *interp) Warnf(format string, args ...any) {
	p := in.scriptPos()
	if in.warned[int32(p.Line)] {
		return
	}
	in.warned[int32(p.Line)] = true
	prefix := ""
	if s := p.String(); s != "" {
		prefix = s + ": "
	}
	fmt.Fprintf(in.stderr, "%swarning: %s\n", prefix, fmt.Sprintf(format, args...))
}

// Files is the file access of the script (docs/language.md#file-access).
func (in *interp) Files() *fileaccess.Policy { return in.files }
