// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const metricsBefore = `# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST",le="0.1"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST",le="1"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST",le="+Inf"} 10
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST"} 0.5
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST",le="0.1"} 5
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST",le="1"} 5
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST",le="+Inf"} 5
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST"} 0.1
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST"} 5
`

// 200 more POSTs: 100 under 0.1 s, 100 between 0.1 and 1 s; and 100
// status PATCHes under 0.1 s.
const metricsAfter = `# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST",le="0.1"} 110
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST",le="1"} 210
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST",le="+Inf"} 210
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST"} 60
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",scope="resource",subresource="",verb="POST"} 210
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="status",verb="PATCH",le="0.1"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="status",verb="PATCH",le="1"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="resource",subresource="status",verb="PATCH",le="+Inf"} 100
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",scope="resource",subresource="status",verb="PATCH"} 1
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",scope="resource",subresource="status",verb="PATCH"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST",le="0.1"} 5
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST",le="1"} 5
apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST",le="+Inf"} 500
apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST"} 900
apiserver_request_duration_seconds_count{component="apiserver",resource="pods",scope="cluster",subresource="",verb="LIST"} 500
`

func TestMutatingLatencyFromTwoScrapes(t *testing.T) {
	before, err := parseAPIMetrics([]byte(metricsBefore))
	require.NoError(t, err)
	after, err := parseAPIMetrics([]byte(metricsAfter))
	require.NoError(t, err)
	assert.NotContains(t, after, "LIST pods", "reads are not mutating calls")

	s := after.since(before).summary()
	assert.Equal(t, 300.0, s.Calls, "only calls between the scrapes count")
	// rank 297 of 300: 200 calls ≤ 0.1 s, 100 in (0.1, 1]: 0.1 + 0.9 × 97/100.
	assert.InDelta(t, 0.973, s.Perc99, 1e-9)
	assert.Equal(t, "POST pods", s.Worst)
	// rank 198 of 200 POSTs: 100 ≤ 0.1, then 98 of 100 into (0.1, 1].
	assert.InDelta(t, 0.982, s.WorstPerc99, 1e-9)
}
