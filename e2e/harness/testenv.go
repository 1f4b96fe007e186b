package harness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/cluster"
)

// Flags a suite binary accepts besides e2e-framework's own (pass them after
// `go test ... -args`). The environment variables are what `gpupool run`
// sets; the flags win.
var (
	fleetFlag     = flag.String("gpupool.fleet", os.Getenv("GPUPOOL_FLEET"), "fleet file (default: the candidate's, else the built-in "+DefaultFleet+")")
	candidateFlag = flag.String("gpupool.candidate", os.Getenv("GPUPOOL_CANDIDATE"), "candidate directory (default: the built-in "+DefaultCandidate+")")
)

type runKey struct{}

// From returns the Run a suite's TestMain set up.
func From(ctx context.Context) *Run {
	r, _ := ctx.Value(runKey{}).(*Run)
	if r == nil {
		panic("harness.From: no gpupool run in this context; the suite's TestMain must use harness.NewTestEnv")
	}
	return r
}

// NewTestEnv returns the e2e-framework environment for a suite package.
//
// With --kubeconfig (how `gpupool run` calls suites) it attaches to that
// cluster, which already has the fleet and candidate. Without it the suite
// brings up its own embedded cluster, provisions it, and destroys it when
// the tests end, on SIGINT/SIGTERM too.
func NewTestEnv(funcs ...SuiteFuncs) (env.Environment, error) {
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
		skip[checks.LabelProvider] = append(skip[checks.LabelProvider], otherProviders("embedded")...)
		cfg.WithSkipLabels(skip)
	}
	for _, f := range funcs {
		if f.Parallel {
			cfg.WithParallelTestEnabled()
		}
	}
	testEnv := env.NewWithConfig(cfg)
	var (
		provider *cluster.Embedded
		run      *Run
		stopOnce sync.Once
	)
	teardown := func() {
		stopOnce.Do(func() {
			if run != nil {
				run.Stop()
			}
			if provider != nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := provider.Down(ctx); err != nil {
					fmt.Fprintf(os.Stderr, "gpupool: tearing down the cluster: %v\n", err)
				}
			}
		})
	}

	testEnv.Setup(func(ctx context.Context, c *envconf.Config) (context.Context, error) {
		plan, err := Prepare(*fleetFlag, *candidateFlag)
		if err != nil {
			return ctx, err
		}
		if kc := c.KubeconfigFile(); kc != "" {
			rc, err := clientcmd.BuildConfigFromFlags("", kc)
			if err != nil {
				return ctx, fmt.Errorf("--kubeconfig %s: %w", kc, err)
			}
			rc.QPS, rc.Burst = 200, 400
			r := &Run{Plan: plan}
			if err := r.Attach(&cluster.Cluster{Name: "attached", Kubeconfig: kc, REST: rc}); err != nil {
				return ctx, err
			}
			return context.WithValue(ctx, runKey{}, r), nil
		}

		provider, err = EmbeddedProvider(NewRunName())
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
		r, err := Up(ctx, plan, provider)
		run = r
		if err != nil {
			return ctx, err
		}
		c.WithKubeconfigFile(r.Cluster.Kubeconfig)
		return context.WithValue(ctx, runKey{}, r), nil
	})
	for _, f := range funcs {
		if f.Setup != nil {
			testEnv.Setup(f.Setup)
		}
	}
	for _, f := range funcs {
		if f.Finish != nil {
			testEnv.Finish(f.Finish)
		}
	}
	testEnv.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		teardown()
		return ctx, nil
	})
	return testEnv, nil
}
