package suite

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
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
)

// Flags a suite binary accepts besides e2e-framework's own (pass them after
// `go test ... -args`). The environment variables are what `gpupool run`
// sets; the flags win.
var (
	fleetFlag     = flag.String("gpupool.fleet", os.Getenv("GPUPOOL_FLEET"), "fleet file (default: the candidate's, else the built-in "+plan.DefaultFleet+")")
	candidateFlag = flag.String("gpupool.candidate", os.Getenv("GPUPOOL_CANDIDATE"), "candidate directory (default: the built-in "+plan.DefaultCandidate+")")
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
	var (
		provider *cluster.Embedded
		run      *harness.Run
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
		pl, err := plan.Prepare(*fleetFlag, *candidateFlag)
		if err != nil {
			return ctx, err
		}
		if kc := c.KubeconfigFile(); kc != "" {
			rc, err := clientcmd.BuildConfigFromFlags("", kc)
			if err != nil {
				return ctx, fmt.Errorf("--kubeconfig %s: %w", kc, err)
			}
			rc.QPS, rc.Burst = 200, 400
			r := &harness.Run{Plan: pl}
			if err := r.Attach(&cluster.Cluster{Name: "attached", Kubeconfig: kc, REST: rc}); err != nil {
				return ctx, err
			}
			return context.WithValue(ctx, runKey{}, r), nil
		}

		provider, err = harness.EmbeddedProvider(harness.NewRunName())
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
		r, err := harness.Up(ctx, pl, provider)
		run = r
		if err != nil {
			return ctx, err
		}
		c.WithKubeconfigFile(r.Cluster.Kubeconfig)
		return context.WithValue(ctx, runKey{}, r), nil
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
