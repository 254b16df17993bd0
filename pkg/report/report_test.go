package report

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
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
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() != 2*panelHeight {
		t.Fatalf("image is %v, want two panels of %d pixels", b, panelHeight)
	}
	// Where each panel's line is drawn, in its own colour: the loss falls
	// from the top of its plot area to the bottom, the accuracy rises.
	for i, want := range []struct{ left, right string }{{"top", "bottom"}, {"bottom", "top"}} {
		c := seriesColor(i)
		area := image.Rect(marginLeft, i*panelHeight+marginTop, plotWidth-marginRight, (i+1)*panelHeight-marginBot)
		ys := func(x int) (lo, hi int) {
			lo, hi = -1, -1
			for y := area.Min.Y; y <= area.Max.Y; y++ {
				r, g, b, _ := img.At(x, y).RGBA()
				if uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(b>>8) == c.B {
					if lo < 0 {
						lo = y
					}
					hi = y
				}
			}
			return lo, hi
		}
		where := func(x int) string {
			lo, hi := ys(x)
			switch {
			case lo < 0:
				return "absent"
			case hi < area.Min.Y+area.Dy()/4:
				return "top"
			case lo > area.Max.Y-area.Dy()/4:
				return "bottom"
			}
			return fmt.Sprintf("rows %d-%d", lo, hi)
		}
		// the columns of the first and last steps: loss 0..29 on an axis
		// from 0 to 30, accuracy 9..29 on one from 5 to 30
		left, right := where(area.Min.X+2), where(area.Max.X-area.Dx()/30-2)
		if i == 1 {
			left, right = where(area.Min.X+area.Dx()*4/25+2), where(area.Max.X-area.Dx()/25-2)
		}
		if left != want.left || right != want.right {
			t.Errorf("panel %d: line at the left %s, at the right %s; want %s and %s", i, left, right, want.left, want.right)
		}
	}
	if err := PlotPNG(path, "empty", nil); err == nil {
		t.Error("plotting nothing should be an error")
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi      float64
		first, last float64
		minN, maxN  int
	}{
		{0, 29, 0, 30, 3, 10},
		{0.0645, 2, 0, 2, 3, 10},
		{0.59, 0.79, 0.55, 0.8, 3, 10},
		{3, 3, 2.6, 3.4, 3, 10}, // a constant series is padded
		{-5, 5, -6, 6, 3, 10},
	} {
		ts, first, last := ticks(tc.lo, tc.hi)
		if first > tc.lo || last < tc.hi || len(ts) < tc.minN || len(ts) > tc.maxN || math.Abs(ts[0]-first) > 1e-9 {
			t.Errorf("ticks(%v, %v) = %v over [%v, %v]", tc.lo, tc.hi, ts, first, last)
		}
	}
}

func TestGlyphs(t *testing.T) {
	if len(glyphBits) != len(glyphChars)*glyphH*(glyphW+1) {
		t.Fatalf("%d bytes of glyph rows for %d characters", len(glyphBits), len(glyphChars))
	}
	if glyph('A') != glyph('a') || glyph('0') == glyph('o') || glyph('e') == glyph('c') {
		t.Error("glyphs not distinct or upper case not folded")
	}
	if g := glyph('€'); g[1] != 0b11111 || g[3] != 0b10001 {
		t.Errorf("a character without a glyph should be a box: %05b", g)
	}
}
