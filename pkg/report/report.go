// Package report shows long work as it happens and sums it up after: a
// progress bar on a terminal and plain lines otherwise (CI logs), metric
// series recorded per step, a sparkline, a lipgloss table, and a PNG plot.
package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal (and colour is allowed).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// Bar reports progress over total steps: a progress bar on a terminal,
// otherwise one plain line every Every steps and at the end.
type Bar struct {
	total, done int
	desc        string
	every       int
	w           io.Writer
	bar         *progressbar.ProgressBar
	start       time.Time
}

// NewBar starts a progress report. every <= 0 picks about 10 lines.
func NewBar(w io.Writer, total int, desc string, every int) *Bar {
	if every <= 0 {
		every = max(1, total/10)
	}
	b := &Bar{total: total, desc: desc, every: every, w: w, start: time.Now()}
	if IsTerminal(w) {
		b.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("step"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return b
}

// SetDescription changes the text shown with the bar (e.g. the loss).
func (b *Bar) SetDescription(desc string) {
	b.desc = desc
	if b.bar != nil {
		b.bar.Describe(desc)
	}
}

// Step marks one step done.
func (b *Bar) Step() {
	b.done++
	if b.bar != nil {
		_ = b.bar.Add(1)
		return
	}
	if b.done%b.every == 0 || b.done == b.total {
		rate := float64(b.done) / time.Since(b.start).Seconds()
		fmt.Fprintf(b.w, "step %d/%d %s (%.2f steps/s)\n", b.done, b.total, b.desc, rate)
	}
}

// Finish ends the bar (on a terminal it clears the line).
func (b *Bar) Finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
		fmt.Fprintln(b.w)
	}
}

// Series is a metric recorded over steps.
type Series struct {
	Name  string
	Steps []int
	Vals  []float64
}

// Recorder collects metric series by name, in first-recorded order.
type Recorder struct {
	names  []string
	series map[string]*Series
}

func NewRecorder() *Recorder { return &Recorder{series: map[string]*Series{}} }

// Add records value v of metric name at step.
func (r *Recorder) Add(name string, step int, v float64) {
	s, ok := r.series[name]
	if !ok {
		s = &Series{Name: name}
		r.series[name] = s
		r.names = append(r.names, name)
	}
	s.Steps = append(s.Steps, step)
	s.Vals = append(s.Vals, v)
}

// Series returns the recorded series in first-recorded order.
func (r *Recorder) Series() []*Series {
	out := make([]*Series, len(r.names))
	for i, n := range r.names {
		out[i] = r.series[n]
	}
	return out
}

// Last returns the last value of a metric.
func (r *Recorder) Last(name string) (float64, bool) {
	s, ok := r.series[name]
	if !ok || len(s.Vals) == 0 {
		return 0, false
	}
	return s.Vals[len(s.Vals)-1], true
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values as a one-line chart of at most width runes
// (values are averaged into buckets).
func Sparkline(vals []float64, width int) string {
	if len(vals) == 0 || width <= 0 {
		return ""
	}
	n := min(width, len(vals))
	buckets := make([]float64, n)
	for i := range buckets {
		lo, hi := i*len(vals)/n, (i+1)*len(vals)/n
		sum := 0.0
		for _, v := range vals[lo:hi] {
			sum += v
		}
		buckets[i] = sum / float64(hi-lo)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range buckets {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	var sb strings.Builder
	for _, v := range buckets {
		i := 0
		if hi > lo {
			i = int((v - lo) / (hi - lo) * float64(len(sparks)-1))
		}
		sb.WriteRune(sparks[i])
	}
	return sb.String()
}

// Table renders rows under headers: a lipgloss table on a terminal, plain
// aligned columns otherwise (so logs and tests read it easily).
func Table(w io.Writer, headers []string, rows [][]string) {
	if IsTerminal(w) {
		t := table.New().Border(lipgloss.RoundedBorder()).Headers(headers...).Rows(rows...).
			StyleFunc(func(row, col int) lipgloss.Style {
				s := lipgloss.NewStyle().Padding(0, 1)
				if row == table.HeaderRow {
					return s.Bold(true)
				}
				return s
			})
		fmt.Fprintln(w, t.Render())
		return
	}
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = len([]rune(h))
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], len([]rune(c)))
			}
		}
	}
	line := func(cells []string) {
		parts := make([]string, len(cells))
		for i, c := range cells {
			parts[i] = c + strings.Repeat(" ", widths[i]-len([]rune(c)))
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(parts, "  "), " "))
	}
	line(headers)
	for _, r := range rows {
		line(r)
	}
}

// SortedKeys is a small helper for deterministic output of maps.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
