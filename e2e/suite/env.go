// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/settings"
)

type runKey struct{}

// From returns the Run the suite's environment set up.
func From(ctx context.Context) *harness.Run {
	r, _ := ctx.Value(runKey{}).(*harness.Run)
	if r == nil {
		panic("suite.From: no gpupool run in this context; the suite must be declared with suite.New and run by suite.GoTest or suite.RunLinked")
	}
	return r
}

// newTestEnv returns the e2e-framework environment for a suite package.
//
// With --kubeconfig (how `gpupool run` calls suites) it attaches to that
// cluster, which already has the fleet and candidate. Without it the suite
// brings up its own embedded cluster, provisions it, and destroys it when
// the tests end, on SIGINT/SIGTERM too.
func newTestEnv(funcs Funcs) (env.Environment, error) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		return nil, err
	}
	if cfg.KubeconfigFile() == "" {
		// The suite brings up its own embedded cluster: checks only
		// another provider can make are skipped by label, as `gpupool run`
		// skips them, and nowhere else.
		skip := cfg.SkipLabels()
		if skip == nil {
			skip = map[string][]string{}
		}
		skip[checks.LabelProvider] = append(skip[checks.LabelProvider], harness.OtherProviders("embedded")...)
		cfg.WithSkipLabels(skip)
	}
	if funcs.Parallel {
		cfg.WithParallelTestEnabled()
	}
	testEnv := env.NewWithConfig(cfg)
	// The suite's own cluster, when it brings one up; closed once, when
	// the tests end or on a signal, even during bring-up.
	var sess atomic.Pointer[harness.Session]
	teardown := func() {
		if s := sess.Load(); s != nil {
			s.Close(context.Background())
		}
	}

	testEnv.Setup(func(ctx context.Context, c *envconf.Config) (context.Context, error) {
		set, err := settings.Current()
		if err != nil {
			return ctx, err
		}
		if set.RunID != "" {
			harness.SetRunID(set.RunID)
		}
		pl, err := plan.Prepare(set.Fleet, set.Candidate)
		if err != nil {
			return ctx, err
		}
		if kc := c.KubeconfigFile(); kc != "" {
			rc, err := clientcmd.BuildConfigFromFlags("", kc)
			if err != nil {
				return ctx, fmt.Errorf("--kubeconfig %s: %w", kc, err)
			}
			rc.QPS, rc.Burst = 200, 400
			r := &harness.Run{Plan: pl, SimulatedPools: set.SimulatedPools, DisruptiveNodes: set.DisruptiveNodes, Disposable: set.Disposable, Autoscaler: set.Autoscaler}
			if err := r.Attach(&cluster.Cluster{Name: "attached", Kubeconfig: kc, REST: rc}); err != nil {
				return ctx, err
			}
			return context.WithValue(ctx, runKey{}, r), nil
		}

		name := harness.NewRunName()
		provider, err := harness.EmbeddedProvider(name)
		if err != nil {
			return ctx, err
		}
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			s := <-sigs
			fmt.Fprintf(os.Stderr, "gpupool: %v: tearing down the cluster\n", s)
			teardown()
			os.Exit(130)
		}()
		s := harness.NewSession(harness.SessionOptions{ID: name, Provider: provider, Output: harness.Output{
			Log: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "gpupool: "+format+"\n", args...) }}})
		sess.Store(s)
		if err := s.Open(ctx, pl); err != nil {
			return ctx, err
		}
		c.WithKubeconfigFile(s.Run.Cluster.Kubeconfig)
		s.Run.Disposable = true // this process removes the cluster at its end
		return context.WithValue(ctx, runKey{}, s.Run), nil
	})
	if funcs.Setup != nil {
		testEnv.Setup(funcs.Setup)
	}
	if funcs.Finish != nil {
		testEnv.Finish(funcs.Finish)
	}
	testEnv.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		teardown()
		return ctx, nil
	})
	return testEnv, nil
}
