// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import "fmt"

// MPS limits (stack-facts §2, DP@1b826acc cmd/mps-control-daemon/mps/device.go
// assertReplicas, maxClients; daemon.go perDevicePinnedDeviceMemoryLimits,
// activeThreadPercentage).

// MPSMaxReplicas is how many MPS clients the control daemon allows per GPU:
// 48 from compute capability 7.5, 16 below (the upstream check is named
// for Volta but compares with 7.5).
func MPSMaxReplicas(sku SKU) int {
	if sku.ComputeMajor > 7 || (sku.ComputeMajor == 7 && sku.ComputeMinor >= 5) {
		return 48
	}
	return 16
}

// MPSClientLimits are what the control daemon pins each client to: device
// memory total/replicas MiB and an active thread percentage 100/replicas,
// both integer divisions.
func MPSClientLimits(sku SKU, replicas int) (memoryMiB, threadPercent int) {
	if replicas < 1 {
		replicas = 1
	}
	return sku.MemoryMiB / replicas, 100 / replicas
}

// MPSError is why the device plugin (or the MPS control daemon it needs)
// does not serve a node under cfg's MPS sharing, or nil: MPS with the
// mixed strategy is refused at start (cmd/nvidia-device-plugin/main.go
// validateFlags), MPS on MIG devices by the plugin (internal/plugin/mps.go
// getMPSOptions), and more replicas than the daemon allows by the daemon.
// The Operator always sets MPS_ROOT, so "requires --mps-root" never applies.
func MPSError(cfg *DevicePluginConfig, strategy string, sku SKU, migDevices bool) error {
	if mode, rr := cfg.SharingMode(); mode != SharingMPS || rr == nil {
		return nil
	}
	switch {
	case strategy == MIGStrategyMixed:
		return fmt.Errorf("using --mig-strategy=mixed is not supported with MPS")
	case migDevices:
		return fmt.Errorf("sharing using MPS is not supported for MIG devices")
	}
	for _, r := range cfg.Sharing.MPS.Resources {
		if max := MPSMaxReplicas(sku); r.Replicas > max {
			return fmt.Errorf("invalid MPS configuration: invalid device maximum allowed replicas exceeded: %d > %d", r.Replicas, max)
		}
	}
	return nil
}
