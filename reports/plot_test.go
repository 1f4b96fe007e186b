package reports

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChartsAreWellFormedSVG(t *testing.T) {
	for name, svg := range map[string]string{
		"line":  LineChart("pods/s <over> time", "s", "pods/s", []Series{{Name: "5k & burst", Points: []float64{0, 120, 300, 280}}, {Name: "empty"}}),
		"bars":  BarChart("latency", "s", []string{"1k", "5k"}, []Series{{Name: "Perc50", Points: []float64{0.1, 0.4}}, {Name: "Perc99", Points: []float64{0.5}}}),
		"empty": LineChart("nothing", "", "", nil),
	} {
		d := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := d.Token()
			if err != nil {
				require.Equal(t, "EOF", err.Error(), "%s: %s", name, svg)
				break
			}
		}
		assert.True(t, strings.HasPrefix(svg, "<svg"), name)
		assert.NotContains(t, svg, "NaN", name)
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.7: 1, 3: 5, 7: 10, 120: 200, 300: 500, 1000: 1000} {
		assert.Equal(t, want, niceCeil(in), "%v", in)
	}
}
