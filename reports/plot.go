// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one line of a chart, or one group member of a bar chart.
type Series struct {
	Name   string
	Points []float64 // y values; x is the index (line charts)
}

// Chart dimensions: plain SVG, no script, so a report is one
// self-contained file a CI system can archive. The legend is HTML under
// the plot, where a long series name wraps instead of being cut.
const (
	chartW, chartH = 640, 300
	padL, padR     = 60, 20
	padT, padB     = 30, 40
)

// colour is series i of n: hues spread evenly, so no two series of a
// chart share a colour however many there are.
func colour(i, n int) string {
	return fmt.Sprintf("hsl(%d, 70%%, 42%%)", i*360/max(n, 1))
}

// LineChart draws series against their index (e.g. seconds) as SVG.
func LineChart(title, xLabel, yLabel string, series []Series) string {
	maxX, maxY := 1, 0.0
	for _, s := range series {
		maxX = max(maxX, len(s.Points)-1)
		for _, v := range s.Points {
			maxY = math.Max(maxY, v)
		}
	}
	maxY = niceCeil(maxY)
	var b strings.Builder
	frame(&b, title, xLabel, yLabel, float64(maxX), maxY)
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	for i, s := range series {
		var pts []string
		for x, v := range s.Points {
			px := float64(padL) + plotW*float64(x)/float64(maxX)
			py := float64(padT) + plotH*(1-v/maxY)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, colour(i, len(series)), strings.Join(pts, " "))
	}
	b.WriteString("</svg>")
	return figure(b.String(), series)
}

// BarChart draws groups (e.g. fleet sizes) of bars (e.g. percentiles).
func BarChart(title, yLabel string, groups []string, series []Series) string {
	maxY := 0.0
	for _, s := range series {
		for _, v := range s.Points {
			maxY = math.Max(maxY, v)
		}
	}
	maxY = niceCeil(maxY)
	var b strings.Builder
	frame(&b, title, "", yLabel, 0, maxY)
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	groupW := plotW / float64(max(len(groups), 1))
	barW := groupW * 0.8 / float64(max(len(series), 1))
	for g, name := range groups {
		x0 := float64(padL) + groupW*float64(g) + groupW*0.1
		for i, s := range series {
			if g >= len(s.Points) {
				continue
			}
			h := plotH * s.Points[g] / maxY
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.3g</title></rect>`,
				x0+barW*float64(i), float64(padT)+plotH-h, barW-1, h, colour(i, len(series)), html.EscapeString(name), html.EscapeString(s.Name), s.Points[g])
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>`, x0+groupW*0.4, chartH-padB+15, html.EscapeString(name))
	}
	b.WriteString("</svg>")
	return figure(b.String(), series)
}

func frame(b *strings.Builder, title, xLabel, yLabel string, maxX, maxY float64) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">`, chartW, chartH)
	fmt.Fprintf(b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`, padL, html.EscapeString(title))
	x1, y1 := chartW-padR, chartH-padB
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, padL, padT, padL, y1, padL, y1, x1, y1)
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		y := float64(padT) + float64(y1-padT)*(1-float64(i)/4)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end">%s</text><line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, padL-4, y+3, short(v), padL, y, x1, y)
	}
	if maxX > 0 {
		for i := 0; i <= 4; i++ {
			v := maxX * float64(i) / 4
			x := float64(padL) + float64(x1-padL)*float64(i)/4
			fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%s</text>`, x, y1+14, short(v))
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" text-anchor="middle">%s</text>`, padL+(x1-padL)/2, chartH-6, html.EscapeString(xLabel))
	fmt.Fprintf(b, `<text x="14" y="%d" font-size="11" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`, padT+(y1-padT)/2, padT+(y1-padT)/2, html.EscapeString(yLabel))
}

// figure is a chart with its legend: one entry per series, its colour's
// swatch and its whole name.
func figure(svg string, series []Series) string {
	var b strings.Builder
	b.WriteString(`<figure class="chart">` + svg + `<figcaption><ul class="legend">`)
	for i, s := range series {
		fmt.Fprintf(&b, `<li><span class="swatch" style="background:%s"></span>%s</li>`, colour(i, len(series)), html.EscapeString(s.Name))
	}
	b.WriteString("</ul></figcaption></figure>")
	return b.String()
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// HTMLPage wraps sections (already HTML) into one self-contained page.
func HTMLPage(title string, sections ...string) string {
	return "<!doctype html><html><head><meta charset=\"utf-8\"><title>" + html.EscapeString(title) +
		"</title><style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.miss{color:#b00}.met{color:#070}figure.chart{margin:1em 0}ul.legend{list-style:none;padding:0;margin:.3em 0 0 60px;columns:2}ul.legend li{font-size:12px;break-inside:avoid}.swatch{display:inline-block;width:10px;height:10px;margin-right:6px}</style></head><body><h1>" +
		html.EscapeString(title) + "</h1>" + strings.Join(sections, "\n") + "</body></html>"
}
