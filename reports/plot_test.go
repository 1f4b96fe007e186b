// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChartsAreWellFormedSVG(t *testing.T) {
	for name, fig := range map[string]string{
		"line":  LineChart("pods/s <over> time", "s", "pods/s", []Series{{Name: "5k & burst", Points: []float64{0, 120, 300, 280}}, {Name: "empty"}}),
		"bars":  BarChart("latency", "s", []string{"1k", "5k"}, []Series{{Name: "Perc50", Points: []float64{0.1, 0.4}}, {Name: "Perc99", Points: []float64{0.5}}}),
		"empty": LineChart("nothing", "", "", nil),
	} {
		d := xml.NewDecoder(strings.NewReader(fig))
		for {
			_, err := d.Token()
			if err != nil {
				require.Equal(t, "EOF", err.Error(), "%s: %s", name, fig)
				break
			}
		}
		assert.True(t, strings.HasPrefix(fig, `<figure class="chart"><svg`), name)
		assert.NotContains(t, fig, "NaN", name)
	}
}

// Every series has a colour of its own and its whole name in the legend,
// however many there are (a scale report's latency chart has three per
// phase) and however long the name.
func TestLegendNamesEverySeriesInItsOwnColour(t *testing.T) {
	var series []Series
	for _, ph := range []string{"burst", "churn-with-pending", "claims-after-fill", "burst-again"} {
		for _, q := range []string{"Perc50", "Perc90", "Perc99"} {
			series = append(series, Series{Name: ph + " " + q, Points: []float64{1}})
		}
	}
	fig := BarChart("latency", "s", []string{"5k"}, series)
	colours := map[string]string{}
	for _, m := range regexp.MustCompile(`<li><span class="swatch" style="background:([^"]+)"></span>([^<]+)</li>`).FindAllStringSubmatch(fig, -1) {
		if other, ok := colours[m[1]]; ok {
			t.Errorf("%s and %s share colour %s", other, m[2], m[1])
		}
		colours[m[1]] = m[2]
	}
	assert.Len(t, colours, len(series), "one legend entry per series")
	assert.Contains(t, fig, ">churn-with-pending Perc99</li>", "the whole name")
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.7: 1, 3: 5, 7: 10, 120: 200, 300: 500, 1000: 1000} {
		assert.Equal(t, want, niceCeil(in), "%v", in)
	}
}
