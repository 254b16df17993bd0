package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strconv"

	"tgc/pkg/fileaccess"
)

// The plot's geometry in pixels. Text is the 5×8 font drawn at textScale.
const (
	plotWidth   = 960
	panelHeight = 320
	marginLeft  = 90  // the y axis' tick labels
	marginRight = 24  //
	marginTop   = 44  // the title (first panel) and the metric's name
	marginBot   = 48  // the x axis' tick labels and "step"
	textScale   = 2   // font pixels per glyph pixel
	tickLen     = 6   //
	lineRadius  = 1.3 // half the series line's width
)

// Colours as 0xRRGGBB.
const (
	paper = 0xffffff
	ink   = 0x282828
	grid  = 0xe1e1e1
)

func rgb(hex uint32) color.RGBA {
	return color.RGBA{uint8(hex >> 16), uint8(hex >> 8), uint8(hex), 255}
}

// seriesColor is the line colour of the i-th panel.
func seriesColor(i int) color.RGBA {
	palette := [...]uint32{0x1f77b4, 0xd62728, 0x2ca02c, 0x9467bd, 0xff7f0e}
	return rgb(palette[i%len(palette)])
}

// PlotPNG writes the series as line charts, one panel per series stacked
// vertically (loss and accuracy have different scales), to a PNG file.
// The drawing is the standard library's image package and a small built-in
// font: a plot is not worth megabytes of font and PDF code in the binary.
func PlotPNG(path, title string, series []*Series) error {
	if len(series) == 0 {
		return fmt.Errorf("plot: nothing recorded to plot")
	}
	img := image.NewRGBA(image.Rect(0, 0, plotWidth, panelHeight*len(series)))
	fill(img, img.Bounds(), rgb(paper))
	for i, s := range series {
		panel := image.Rect(0, i*panelHeight, plotWidth, (i+1)*panelHeight)
		if i == 0 && title != "" {
			drawText(img, (plotWidth-textWidth(title))/2, panel.Min.Y+4, title, rgb(ink))
		}
		drawPanel(img, panel, s, seriesColor(i))
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		return err
	}
	return fileaccess.WriteFile(path, out.Bytes(), 0o644)
}

// drawPanel draws one series with its axes, grid and tick labels in panel.
func drawPanel(img *image.RGBA, panel image.Rectangle, s *Series, c color.RGBA) {
	area := image.Rect(panel.Min.X+marginLeft, panel.Min.Y+marginTop, panel.Max.X-marginRight, panel.Max.Y-marginBot)
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for j, v := range s.Vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		x := float64(s.Steps[j])
		xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
		ylo, yhi = math.Min(ylo, v), math.Max(yhi, v)
	}
	if xlo > xhi { // nothing finite to draw
		xlo, xhi, ylo, yhi = 0, 1, 0, 1
	}
	xt, xlo, xhi := ticks(xlo, xhi)
	yt, ylo, yhi := ticks(ylo, yhi)
	px := func(x float64) float64 {
		return float64(area.Min.X) + (x-xlo)/(xhi-xlo)*float64(area.Dx())
	}
	py := func(y float64) float64 {
		return float64(area.Max.Y) - (y-ylo)/(yhi-ylo)*float64(area.Dy())
	}
	charH := glyphH * textScale
	for _, t := range yt {
		y := int(math.Round(py(t)))
		fill(img, image.Rect(area.Min.X, y, area.Max.X, y+1), rgb(grid))
		fill(img, image.Rect(area.Min.X-tickLen, y, area.Min.X, y+1), rgb(ink))
		label := formatTick(t)
		drawText(img, area.Min.X-tickLen-4-textWidth(label), y-charH/2+textScale, label, rgb(ink))
	}
	for _, t := range xt {
		x := int(math.Round(px(t)))
		fill(img, image.Rect(x, area.Min.Y, x+1, area.Max.Y), rgb(grid))
		fill(img, image.Rect(x, area.Max.Y, x+1, area.Max.Y+tickLen), rgb(ink))
		label := formatTick(t)
		drawText(img, x-textWidth(label)/2, area.Max.Y+tickLen+4, label, rgb(ink))
	}
	// the frame
	fill(img, image.Rect(area.Min.X, area.Min.Y, area.Max.X, area.Min.Y+1), rgb(ink))
	fill(img, image.Rect(area.Min.X, area.Max.Y, area.Max.X+1, area.Max.Y+1), rgb(ink))
	fill(img, image.Rect(area.Min.X, area.Min.Y, area.Min.X+1, area.Max.Y), rgb(ink))
	fill(img, image.Rect(area.Max.X, area.Min.Y, area.Max.X+1, area.Max.Y), rgb(ink))
	drawText(img, area.Min.X, area.Min.Y-charH-6, s.Name, c)
	drawText(img, area.Max.X-textWidth("step"), area.Max.Y+tickLen+charH+10, "step", rgb(ink))

	// the series: segments between consecutive finite points, a dot for a
	// point alone
	prevOK := false
	var x0, y0 float64
	for j, v := range s.Vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			prevOK = false
			continue
		}
		x1, y1 := px(float64(s.Steps[j])), py(v)
		if prevOK {
			drawLine(img, x0, y0, x1, y1, c)
		} else {
			drawLine(img, x1, y1, x1, y1, c)
		}
		x0, y0, prevOK = x1, y1, true
	}
}

// ticks returns 3–10 round tick values covering [lo, hi] (steps of 1, 2 or
// 5 times a power of ten) and the axis range they span.
func ticks(lo, hi float64) ([]float64, float64, float64) {
	if hi-lo < 1e-12*math.Max(1, math.Abs(hi)) { // a constant series
		pad := math.Max(math.Abs(hi)*0.1, 1e-3)
		lo, hi = lo-pad, hi+pad
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if raw > step {
			step = m * mag
		}
	}
	first, last := math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	var out []float64
	for i := 0; ; i++ {
		t := first + float64(i)*step
		if t > last+step/2 {
			break
		}
		out = append(out, t)
	}
	return out, first, last
}

// formatTick writes a tick value short: 4 significant digits, no "-0".
func formatTick(v float64) string {
	if math.Abs(v) < 1e-12 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func textWidth(s string) int { return len([]rune(s)) * (glyphW + 1) * textScale }

// drawText draws s with its top-left corner at (x, y).
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		g := glyph(r)
		for row := 0; row < glyphH; row++ {
			for col := 0; col < glyphW; col++ {
				if g[row]&(1<<(glyphW-1-col)) != 0 {
					px, py := x+col*textScale, y+row*textScale
					fill(img, image.Rect(px, py, px+textScale, py+textScale), c)
				}
			}
		}
		x += (glyphW + 1) * textScale
	}
}

// drawLine draws a segment lineRadius thick with soft edges: each pixel near
// the segment is blended by its distance from it.
func drawLine(img *image.RGBA, x0, y0, x1, y1 float64, c color.RGBA) {
	const r = lineRadius
	minX, maxX := int(math.Floor(math.Min(x0, x1)-r-1)), int(math.Ceil(math.Max(x0, x1)+r+1))
	minY, maxY := int(math.Floor(math.Min(y0, y1)-r-1)), int(math.Ceil(math.Max(y0, y1)+r+1))
	dx, dy := x1-x0, y1-y0
	l2 := dx*dx + dy*dy
	b := img.Bounds()
	for y := max(minY, b.Min.Y); y <= min(maxY, b.Max.Y-1); y++ {
		for x := max(minX, b.Min.X); x <= min(maxX, b.Max.X-1); x++ {
			cx, cy := float64(x)+0.5, float64(y)+0.5
			t := 0.0
			if l2 > 0 {
				t = math.Max(0, math.Min(1, ((cx-x0)*dx+(cy-y0)*dy)/l2))
			}
			d := math.Hypot(cx-(x0+t*dx), cy-(y0+t*dy))
			a := math.Max(0, math.Min(1, r+0.5-d))
			if a == 0 {
				continue
			}
			old := img.RGBAAt(x, y)
			mix := func(o, n uint8) uint8 { return uint8(float64(o)*(1-a) + float64(n)*a + 0.5) }
			img.SetRGBA(x, y, color.RGBA{mix(old.R, c.R), mix(old.G, c.G), mix(old.B, c.B), 255})
		}
	}
}
