// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
)

func upCommand() *cobra.Command {
	c := &cobra.Command{Use: "up", Short: "bring up a cluster with the fleet and candidate and keep it until Ctrl-C", Args: cobra.NoArgs}
	fs := c.Flags()
	var f runFlags
	f.register(fs)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		pl, err := plan.Prepare(absOrEmpty(f.fleet), absOrEmpty(f.candidate))
		if err != nil {
			return err
		}
		pl.ServerSideApply = f.serverSide
		name := harness.NewRunName()
		provider, err := harness.NewProvider(f.provider, name)
		if err != nil {
			return err
		}
		s, err := harness.Open(ctx, pl, harness.SessionOptions{ID: name, Provider: provider, Output: harness.Output{Log: logf}})
		// Whatever happens, on Ctrl-C too, the cluster goes.
		defer s.Close(ctx)
		if err != nil {
			return err
		}
		r := s.Run
		fmt.Printf("cluster %s is up with fleet %s and candidate %s\n\n  export KUBECONFIG=%s\n\nCtrl-C removes it.\n",
			name, pl.Fleet.Metadata.Name, pl.Candidate.Name, r.Cluster.Kubeconfig)
		<-ctx.Done()
		return nil
	}
	return c
}

func downCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "down [CLUSTER...]",
		Short: "remove the clusters gpupool left on this machine (not a live run's unless named or --force), or with --kubeconfig every object it left in that cluster",
		Long: "Without arguments, down removes every cluster gpupool made on this machine that no running gpupool owns: those of runs that are gone, " +
			"and those kept with --keep-cluster. A live run's cluster is left, and said so, unless it is named or --force is given.",
	}
	fs := c.Flags()
	var only, kubeconfig, kubeContext string
	var force bool
	registerProvider(fs, &only)
	fs.BoolVar(&force, "force", false, "also remove clusters live runs are using (those runs then fail)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "instead: remove from this existing cluster every object a gpupool run made there (labelled "+harness.LabelRun+") and every check pod")
	fs.StringVar(&kubeContext, "context", "", "the kubeconfig context to use (default its current one)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if kubeconfig != "" {
			if len(args) > 0 {
				return fmt.Errorf("--kubeconfig removes objects from one cluster; it takes no cluster names (got %v)", args)
			}
			e := &cluster.Existing{Kubeconfig: kubeconfig, Context: kubeContext}
			defer e.Release()
			cl, err := e.Up(ctx)
			if err != nil {
				return err
			}
			n, err := harness.RemoveOwned(ctx, cl.REST, "", 2*time.Minute)
			logf("removed %d objects gpupool runs made in %s", n, cl.Name)
			return err
		}
		// Every provider unless one is named: down means nothing of gpupool's is left.
		kinds := harness.Providers
		if only != "" {
			kinds = []string{only}
		}
		var errs []error
		found := map[string]bool{}
		for _, kind := range kinds {
			provider, err := harness.NewProvider(kind, "down")
			if err != nil {
				if only != "" {
					return err
				}
				continue // not set up on this machine: it made no clusters
			}
			r, err := provider.Remove(ctx, cluster.Removal{Names: args, Force: force})
			for _, n := range r.Names {
				found[n] = true
			}
			logf("removed %d %s clusters%s", len(r.Names), kind, listed(r.Names))
			for _, l := range r.Left {
				found[strings.Fields(l)[0]] = true
				logf("left %s cluster %s", kind, l)
			}
			errs = append(errs, err)
		}
		for _, n := range args {
			if !found[n] {
				errs = append(errs, fmt.Errorf("no gpupool cluster is named %s", n))
			}
		}
		// The private kubeconfigs of --kubeconfig runs killed with SIGKILL.
		if n, err := cluster.RemoveStaleKubeconfigs(); n > 0 || err != nil {
			logf("removed %d kubeconfigs left by --kubeconfig runs that are gone", n)
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return c
}

// listed is ": a, b" for a non-empty list.
func listed(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ": " + strings.Join(names, ", ")
}

func checksCommand() *cobra.Command {
	c := &cobra.Command{Use: "checks", Short: "list the contract checks, their areas and rules", Args: cobra.NoArgs}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "AREA\tCHECK\tRULE")
		for _, a := range checks.Areas {
			for _, c := range checks.All() {
				if c.Area == a.ID {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Title, c.ID, c.Rule)
				}
			}
		}
		return tw.Flush()
	}
	return c
}
