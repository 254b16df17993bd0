package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlainProgressLines(t *testing.T) {
	var buf bytes.Buffer
	b := NewBar(&buf, 20, "loss 1.0", 5)
	for i := 0; i < 20; i++ {
		if i == 10 {
			b.SetDescription("loss 0.5")
		}
		b.Step()
	}
	b.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "step 5/20 loss 1.0") || !strings.HasPrefix(lines[3], "step 20/20 loss 0.5") {
		t.Errorf("plain progress lines:\n%s", buf.String())
	}
}

func TestSparkline(t *testing.T) {
	if got := Sparkline([]float64{0, 1, 2, 3, 4, 5, 6, 7}, 8); got != "▁▂▃▄▅▆▇█" {
		t.Errorf("got %q", got)
	}
	if got := Sparkline([]float64{3, 3, 3, 1, 1, 1}, 2); got != "█▁" {
		t.Errorf("bucketed: got %q", got)
	}
	if Sparkline(nil, 5) != "" {
		t.Error("empty series should draw nothing")
	}
}

func TestPlainTable(t *testing.T) {
	var buf bytes.Buffer
	Table(&buf, []string{"metric", "value"}, [][]string{{"accuracy", "98.2%"}, {"steps", "70"}})
	want := "metric    value\naccuracy  98.2%\nsteps     70\n"
	if buf.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", buf.String(), want)
	}
}

func TestPlotPNG(t *testing.T) {
	r := NewRecorder()
	for i := 0; i < 30; i++ {
		r.Add("loss", i, 2/float64(i+1))
		if i%10 == 9 {
			r.Add("accuracy", i, 0.5+float64(i)/100)
		}
	}
	if v, _ := r.Last("accuracy"); v != 0.79 {
		t.Errorf("last accuracy %v", v)
	}
	path := filepath.Join(t.TempDir(), "curve.png")
	if err := PlotPNG(path, "training", r.Series()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 400 {
		t.Errorf("image is only %v", b)
	}
	if err := PlotPNG(path, "empty", nil); err == nil {
		t.Error("plotting nothing should be an error")
	}
}
