// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// allocation is the devices the simulated device plugin gave one pod, and
// when (unix ns).
type allocation struct {
	devices []string
	at      int64
	// noGPU says why the container cannot use the devices (its runtime
	// injects none), "" when it can: written with the devices, so a reader
	// never sees devices without the verdict on them.
	noGPU string
}

// deviceCheckpoint is the simulated kubelet's memory of what it allocated,
// as the real device manager keeps a checkpoint: a pod's devices are
// decided once, at admission, and never recomputed. Entries go when the
// pod is deleted.
type deviceCheckpoint struct {
	mu    sync.Mutex
	byUID map[types.UID]allocation
}

func newDeviceCheckpoint() *deviceCheckpoint {
	return &deviceCheckpoint{byUID: map[types.UID]allocation{}}
}

func (c *deviceCheckpoint) get(uid types.UID) (allocation, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.byUID[uid]
	return a, ok
}

func (c *deviceCheckpoint) put(uid types.UID, a allocation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byUID[uid] = a
}

func (c *deviceCheckpoint) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byUID, uid)
}

func (c *deviceCheckpoint) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byUID)
}
