package scale

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPercentilesNearestRank(t *testing.T) {
	var s []float64
	for i := 1; i <= 100; i++ {
		s = append(s, float64(i))
	}
	p := percentiles(s)
	assert.Equal(t, Percentiles{Average: 50.5, Perc50: 50, Perc90: 90, Perc99: 99, Samples: 100}, p)
	assert.Equal(t, Percentiles{Average: 7, Perc50: 7, Perc90: 7, Perc99: 7, Samples: 1}, percentiles([]float64{7}))
	assert.Equal(t, Percentiles{}, percentiles(nil))
}
