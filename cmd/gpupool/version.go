// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"github.com/spf13/cobra"
	"os"
	"runtime/debug"
	"text/tabwriter"
)

// versionCommand prints gpupool's own version and every component a run uses,
// so a report, an issue or a certification names exactly what ran.
func versionCommand() *cobra.Command {
	c := &cobra.Command{Use: "version", Short: "print gpupool's version and the version of every component it runs", Args: cobra.NoArgs}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		v := componentVersions()
		for _, k := range []string{"gpupool", "go", "kubernetes", "etcd", "kwok", "kind", "gpu-operator"} {
			fmt.Fprintf(tw, "%s\t%s\n", k, v[k])
		}
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, d := range bi.Deps {
				switch d.Path {
				case "k8s.io/client-go", "sigs.k8s.io/e2e-framework", "pgregory.net/rapid":
					fmt.Fprintf(tw, "%s\t%s\n", d.Path, d.Version)
				}
			}
		}
		return tw.Flush()
	}
	return c
}

// ownVersion is the module version 'go install ...@version' stamps, or
// the VCS revision of a build from a checkout.
func ownVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v = "(devel) " + rev
		if dirty {
			v += "+dirty"
		}
	}
	return v
}
