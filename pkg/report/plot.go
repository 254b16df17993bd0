package report

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"tgc/pkg/fileaccess"
)

// PlotPNG writes the series as line charts, one panel per series stacked
// vertically (loss and accuracy have different scales), to a PNG file.
func PlotPNG(path, title string, series []*Series) error {
	if len(series) == 0 {
		return fmt.Errorf("plot: nothing recorded to plot")
	}
	const w, panel = 8 * vg.Inch, 3 * vg.Inch
	plots := make([][]*plot.Plot, len(series))
	for i, s := range series {
		p := plot.New()
		if i == 0 {
			p.Title.Text = title
		}
		p.X.Label.Text = "step"
		p.Y.Label.Text = s.Name
		pts := make(plotter.XYs, len(s.Vals))
		for j := range s.Vals {
			pts[j].X, pts[j].Y = float64(s.Steps[j]), s.Vals[j]
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		p.Add(line, plotter.NewGrid())
		plots[i] = []*plot.Plot{p}
	}
	img := vgimg.New(w, panel*vg.Length(len(series)))
	tiles := draw.Tiles{Rows: len(series), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadX: vg.Points(4), PadY: vg.Points(8)}
	canvases := plot.Align(plots, tiles, draw.New(img))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var png bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&png); err != nil {
		return err
	}
	return fileaccess.WriteFile(path, png.Bytes(), 0o644)
}
