package main

import (
	"context"
	"errors"
	"fmt"
	"os"
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
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := provider.Down(dctx); err != nil {
				logf("tearing down %s: %v", name, err)
				return
			}
			logf("cluster %s removed", name)
		}()
		r, err := harness.Up(ctx, pl, provider)
		if err != nil {
			return err
		}
		fmt.Printf("cluster %s is up with fleet %s and candidate %s\n\n  export KUBECONFIG=%s\n\nCtrl-C removes it.\n",
			name, pl.Fleet.Metadata.Name, pl.Candidate.Name, r.Cluster.Kubeconfig)
		<-ctx.Done()
		return nil
	}
	return c
}

func downCommand() *cobra.Command {
	c := &cobra.Command{Use: "down", Short: "remove every cluster gpupool left on this machine, or with --kubeconfig every object it left in that cluster", Args: cobra.NoArgs}
	fs := c.Flags()
	var only, kubeconfig, kubeContext string
	registerProvider(fs, &only)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "instead: remove from this existing cluster every object a gpupool run made there (labelled "+harness.LabelRun+") and every check pod")
	fs.StringVar(&kubeContext, "context", "", "the kubeconfig context to use (default its current one)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if kubeconfig != "" {
			e := &cluster.Existing{Kubeconfig: kubeconfig, Context: kubeContext}
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
		for _, kind := range kinds {
			provider, err := harness.NewProvider(kind, "down")
			if err != nil {
				if only != "" {
					return err
				}
				continue // not set up on this machine: it made no clusters
			}
			n, err := provider.RemoveAll(ctx)
			logf("removed %d %s clusters", n, kind)
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return c
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
