// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import "fmt"

// GPUInjected reports whether a container run by the runtime handler
// (of its RuntimeClass; "" for none) gets a usable GPU on the simulated
// nodes, and if not, why. The simulated GPU Operator is the one whose CRD
// the cluster serves (GOmod@d73a0086, v25.3.4, stack-facts §6):
//   - the nvidia handler always injects;
//   - no handler runs containerd's default runtime, which the toolkit makes
//     nvidia unless its env says otherwise (CTK defaultSetAsDefault) or it is
//     disabled (the host's default is then taken to be plain runc);
//   - any other handler is plain runc, which ignores NVIDIA_VISIBLE_DEVICES.
//     Turning CDI on does not change that in v25.3.4: its device plugin
//     returns nvidia.cdi.k8s.io/ annotations, which only the nvidia runtime
//     reads. (From v25.10, with CDI on by default, containerd injects the
//     CDI devices for any runc handler; that version is not simulated.)
//
// nvidia-cdi and nvidia-legacy are the toolkit's runtimes in its CDI and
// legacy modes; GO creates their RuntimeClasses only with CDI on. What a pod
// gets under them is not verified upstream; they are taken to inject.
func (s *Stack) GPUInjected(handler string) (bool, string) {
	if s.Policy == nil {
		return false, "no GPU Operator (no ClusterPolicy)"
	}
	p := s.Policy
	switch handler {
	case RuntimeHandler:
		return true, ""
	case "nvidia-cdi", "nvidia-legacy":
		if p.CDIEnabled {
			return true, ""
		}
		return false, fmt.Sprintf("runtime handler %s exists only with ClusterPolicy spec.cdi.enabled=true", handler)
	case "":
		switch {
		case !p.ToolkitEnabled:
			return false, "it names no RuntimeClass, and with spec.toolkit.enabled=false containerd's default runtime is runc, which ignores NVIDIA_VISIBLE_DEVICES"
		case !p.ToolkitSetAsDefault:
			return false, "it names no RuntimeClass, and spec.toolkit.env keeps nvidia from being containerd's default runtime (NVIDIA_RUNTIME_SET_AS_DEFAULT=false), so runc runs it and ignores NVIDIA_VISIBLE_DEVICES"
		}
		return true, ""
	}
	why := fmt.Sprintf("it runs under runtime handler %s, not %q, which ignores NVIDIA_VISIBLE_DEVICES", handler, RuntimeHandler)
	if p.CDIEnabled {
		why += " (with CDI on, GPU Operator v25.3.4's device plugin passes CDI devices as nvidia.cdi.k8s.io/ annotations, which only the nvidia runtime reads)"
	}
	return false, why
}
