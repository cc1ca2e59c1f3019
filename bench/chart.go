package main

import (
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/operator-flow/operator-flow/apicount"
)

var (
	blue   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	orange = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	grey   = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

// chart draws two panels side by side: the operator's requests per object,
// next to its writes and the stage's lower bound of writes, and the create
// phase's time to converge as a multiple of the floor. objects is the
// number of tickets plus Loggers in the workload.
func chart(results []StageResult, f floors, objects float64, path string) error {
	names := make([]string, len(results))
	perObject := make(plotter.Values, len(results))
	writes := make(plotter.Values, len(results))
	ticketRatio := make(plotter.Values, len(results))
	loggerRatio := make(plotter.Values, len(results))
	bound := make(plotter.Values, len(results))
	for i, r := range results {
		names[i] = r.Stage[:2]
		tot := r.total()
		total, _, _ := apicount.Totals(map[apicount.Key]int(tot))
		perObject[i] = float64(total) / objects
		writes[i] = float64(tot.Sum(isWrite)) / objects
		bound[i] = float64(r.bound()) / objects
		ticketRatio[i], loggerRatio[i] = r.createRatios(f)
	}

	left := plot.New()
	left.Title.Text = "API requests per object (operator)"
	left.Y.Label.Text = "requests / object"
	if err := groupedBars(left, names, []plotter.Values{perObject, writes, bound}, []string{"all requests", "writes (Events left out)", "lower bound of writes"}); err != nil {
		return err
	}

	right := plot.New()
	right.Title.Text = "Time to converge (create), × floor"
	right.Y.Label.Text = "time / floor"
	if err := groupedBars(right, names, []plotter.Values{ticketRatio, loggerRatio}, []string{"tickets", "Loggers"}); err != nil {
		return err
	}
	if line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(names)) - 0.5, Y: 1}}); err == nil {
		line.Color, line.Dashes = grey, []vg.Length{vg.Points(4), vg.Points(3)}
		right.Add(line)
		right.Legend.Add("floor", line)
	}

	img := vgimg.New(vg.Points(960), vg.Points(380))
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	canvases := plot.Align([][]*plot.Plot{{left, right}}, tiles, draw.New(img))
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])

	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(fh); err != nil {
		_ = fh.Close() // the write's error is the one to report
		return err
	}
	return fh.Close()
}

func groupedBars(p *plot.Plot, names []string, series []plotter.Values, labels []string) error {
	w := vg.Points(18)
	colors := []color.Color{blue, orange, grey}
	for i, vals := range series {
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = colors[i%len(colors)]
		bars.Offset = w * vg.Length(2*i-len(series)+1) / 2
		p.Add(bars)
		p.Legend.Add(labels[i], bars)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	return nil
}
