package cluster

import (
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// kwokDefaultStages are the Stages kwokctl gives the embedded cluster's
// kwok controller by default, from the kwok module itself, so KWOK nodes
// and pods behave the same inside kind.
var kwokDefaultStages = []string{
	nodefast.DefaultNodeInit,
	nodeheartbeat.DefaultNodeHeartbeatWithLease,
	podfast.DefaultPodReady,
	podfast.DefaultPodComplete,
	podfast.DefaultPodDelete,
}
