// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	stagev1alpha1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"
)

// kwokDefaultStages are the Stages kwokctl gives a binary-runtime cluster
// by default (node init, heartbeat with leases, pod ready, complete,
// delete), from the kwok module itself, so KWOK nodes and pods behave the
// same on the embedded cluster, inside kind and beside an existing
// cluster. The pod stages that write status are made conditional on the
// pod they read (podStagesConditional).
var kwokDefaultStages = append([]string{
	nodefast.DefaultNodeInit,
	nodeheartbeat.DefaultNodeHeartbeatWithLease,
}, mustConditional(podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete)...)

func mustConditional(stages ...string) []string {
	out, err := podStagesConditional(stages)
	if err != nil {
		panic(err) // kwok's own embedded Stages: a test covers them
	}
	return out
}

// podStagesConditional rewrites each pod Stage that patches status so the
// patch carries the resourceVersion kwok read: the apiserver refuses it
// (a conflict) when the pod changed since. Kwok's controller writes pod
// status beside the simulated kubelet's admission (fakegpu), and with an
// unconditional patch from a stale cache it marks Running a pod the
// kubelet had already refused, which no kubelet does (kubelet-facts §1.7).
// A refused patch is not lost: the change that caused it reaches kwok as
// an event of its own, and the pod is matched afresh (a Failed pod matches
// no Stage). Stages that write no status pass through as they are.
func podStagesConditional(stages []string) ([]string, error) {
	out := make([]string, 0, len(stages))
	for _, raw := range stages {
		var s stagev1alpha1.Stage
		if err := yaml.UnmarshalStrict([]byte(raw), &s); err != nil {
			return nil, fmt.Errorf("kwok Stage: %w", err)
		}
		next := s.Spec.Next
		if s.Spec.ResourceRef.Kind != "Pod" || next == nil || next.StatusTemplate == "" {
			out = append(out, raw)
			continue
		}
		if len(next.Patches) > 0 || next.StatusSubresource != nil || next.StatusPatchAs != nil {
			return nil, fmt.Errorf("kwok Stage %s: a status template beside patches, a subresource or impersonation is not one this rewrite knows", s.Name)
		}
		var tpl strings.Builder
		tpl.WriteString("metadata:\n  resourceVersion: {{ .metadata.resourceVersion | Quote }}\nstatus:\n")
		for line := range strings.SplitSeq(strings.TrimRight(next.StatusTemplate, "\n"), "\n") {
			tpl.WriteString("  " + line + "\n")
		}
		next.Patches = []stagev1alpha1.StagePatch{{Subresource: "status", Template: tpl.String()}}
		next.StatusTemplate = ""
		b, err := yaml.Marshal(s)
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}
