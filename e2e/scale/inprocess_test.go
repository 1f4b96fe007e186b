// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What scheduler_perf v1.37.2 writes (util.go dataItems2JSONFile), cut to
// two items.
const dataItems = `{"version":"v1","dataItems":[
 {"data":{"Average":0.41,"Perc50":0.3},"unit":"ms","labels":{"Metric":"scheduler_scheduling_attempt_duration_seconds","Name":"SchedulingWithExtendedResource/5000pods_5000nodes"}},
 {"data":{"Average":44.3,"Perc50":43,"Perc90":60,"Perc95":62,"Perc99":70},"unit":"pods/s","labels":{"Metric":"SchedulingThroughput","Name":"SchedulingWithExtendedResource/5000pods_5000nodes"}}]}`

func TestInProcessThroughputIsReadFromDataItems(t *testing.T) {
	ip, err := ParseInProcess([]byte(dataItems), "inprocess.json")
	require.NoError(t, err)
	assert.Equal(t, 44.3, ip.Average)
	assert.Equal(t, "SchedulingWithExtendedResource/5000pods_5000nodes", ip.Name)

	_, err = ParseInProcess([]byte(`{"dataItems":[]}`), "empty.json")
	assert.ErrorContains(t, err, "empty.json: no data item with label Metric=SchedulingThroughput")
	_, err = ParseInProcess([]byte(`[1`), "cut.json")
	assert.ErrorContains(t, err, "cut.json: not scheduler_perf data items")
}

// A burst's throughput is set beside the same-day in-process figure, with
// the ratio held to the target; a claims-only burst is not.
func TestBurstIsSetBesideTheInProcessRun(t *testing.T) {
	ip := &InProcess{Average: 40, Name: "upstream", Source: "ip.json"}
	burst := []Figure{{Run: "5k", Name: "burst SchedulingThroughput Average", Value: 30, Anchor: anchorExtendedResource}}
	figs := Beside(burst, false, ip)
	require.Len(t, figs, 2)
	assert.Contains(t, figs[0].Anchor, "same day: upstream, 40.0 pods/s (ip.json)")
	assert.Equal(t, "burst SchedulingThroughput ÷ in-process", figs[1].Name)
	assert.Equal(t, 0.75, figs[1].Value)
	assert.False(t, *figs[1].Met)
	claims := []Figure{{Run: "dra", Name: "burst SchedulingThroughput Average", Value: 30, Anchor: anchorClaimTemplate}}
	assert.Equal(t, claims, Beside(claims, true, ip), "claims are set beside their own workload")
	assert.Equal(t, burst, Beside(burst, false, nil))
}
