// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// Removal says which of gpupool's clusters `gpupool down` removes: every
// one no live run owns (its run is gone, or kept it with --keep-cluster),
// the ones named, and with Force every one.
type Removal struct {
	Names []string
	Force bool
}

// Removed is what a removal did: the clusters it removed, and the ones it
// left, each with why.
type Removed struct {
	Names []string
	Left  []string
}

// removeClusters applies r to the clusters under dir with remove; a name
// of r that is not among them is another provider's (or none's).
func removeClusters(ctx context.Context, dir string, r Removal, remove func(context.Context, string) error) (Removed, error) {
	var out Removed
	names, err := clusterNames(dir)
	if err != nil {
		return out, err
	}
	var errs []error
	for _, name := range names {
		named := slices.Contains(r.Names, name)
		if len(r.Names) > 0 && !named {
			continue
		}
		if live, why := liveRun(filepath.Join(dir, name)); live && !named && !r.Force {
			out.Left = append(out.Left, name+" ("+why+"; name it or use --force to remove it anyway)")
			continue
		}
		if err := remove(ctx, name); err != nil {
			errs = append(errs, err)
			continue
		}
		out.Names = append(out.Names, name)
	}
	return out, errors.Join(errs...)
}

// liveRun reports whether a running gpupool process owns the cluster in
// dir (not one kept by --keep-cluster, whose run is over), and says which.
func liveRun(dir string) (bool, string) {
	o, ok := readOwner(dir)
	switch {
	case !ok:
		if beingClaimed(dir) {
			return true, "a run is bringing it up"
		}
		return false, ""
	case o.Detached:
		return false, ""
	case ownerAlive(dir):
		return true, fmt.Sprintf("in use by gpupool run pid %d", o.PID)
	}
	return false, ""
}
