// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Command gpupool checks a Kubernetes GPU pool contract: it brings up a
// cluster with simulated GPU node pools, installs a candidate (a team's
// policies and GPU Operator configs), runs the contract suites, and writes
// reports.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/gpupool/gpupool/e2e/netns"
	"github.com/gpupool/gpupool/e2e/runner"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/suites"
)

// newRoot is the command tree, as kubectl, kind and kwokctl build theirs:
// help per command ('gpupool run -h'), shell completion ('gpupool
// completion bash'), flags with env-var defaults named in their help.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "gpupool",
		Short: "gpupool checks a Kubernetes GPU pool contract",
		Long: `gpupool checks a Kubernetes GPU pool contract: it brings up a cluster with
simulated GPU node pools (KWOK) and a fake NVIDIA stack, installs a candidate
(a team's policies and GPU Operator configs), runs the contract suites
through the real apiserver and scheduler, and writes reports.

Exit codes: 0 every check passed; 1 a check failed; 2 bad input, a setup
error, or the cluster lost mid-run (no verdict); 130 interrupted.`,
		SilenceUsage:  true, // a failed check is not a usage error
		SilenceErrors: true, // main prints errors once, with the exit code they mean
	}
	verbosity := root.PersistentFlags().IntP("verbosity", "v", 0, "also print client-go's own log lines, at klog's -v=N (default 0: none; env "+EnvVerbosity+")")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if cmd.Flags().Changed("verbosity") {
			// Children (the suites) read it from the environment.
			os.Setenv(EnvVerbosity, strconv.Itoa(*verbosity))
			quietKlog(*verbosity)
		}
	}
	root.AddCommand(runCommand(), upCommand(), downCommand(), mutantsCommand(), certifyCommand(),
		scaleCommand(), explainCommand(), reportCommand(), checksCommand(), versionCommand())
	return root
}

// exitError carries an exit code out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// EnvVerbosity passes --verbosity to the suites' child processes.
const EnvVerbosity = "GPUPOOL_VERBOSITY"

// quietKlog keeps client-go's own log lines ("Neither --kubeconfig nor
// --master was specified", "watch ended with error") off the console:
// gpupool says what went wrong in its own words, and a reflector's retry
// is no news to a user. With verbosity v > 0 they come back, at klog's -v=v.
func quietKlog(v int) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if v <= 0 {
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
		return
	}
	_ = fs.Set("logtostderr", "true")
	_ = fs.Set("v", strconv.Itoa(v))
}

func main() {
	v, _ := strconv.Atoi(os.Getenv(EnvVerbosity))
	if len(os.Args) > 1 && os.Args[1] == netns.Arg {
		// The first process of a network namespace a run made for a
		// controller that listens on every interface (Karpenter).
		os.Exit(netns.Main(os.Args[2:]))
	}
	if len(os.Args) > 2 && os.Args[1] == runner.SuiteArg {
		quietKlog(v)
		os.Exit(suiteExec(os.Args[2], os.Args[3:]))
	}
	quietKlog(v)
	stopStatus := startStatus()
	code := runCLI(newRoot())
	stopStatus()
	os.Exit(code)
}

// runCLI runs the command line and returns the exit code.
func runCLI(root *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		root.SetArgs([]string{"version"})
	}
	err := root.ExecuteContext(ctx)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, pflag.ErrHelp):
		return 0
	}
	fmt.Fprintln(os.Stderr, "gpupool:", err)
	if ctx.Err() != nil {
		return 130
	}
	return 2
}

// suiteExec is the child process a run starts for each suite
// (runner.SuiteArg): it runs the named suite with go test's flags and
// returns the exit code.
func suiteExec(name string, args []string) int {
	ss, err := suites.Select(name)
	if err != nil || len(ss) != 1 {
		fmt.Fprintf(os.Stderr, "gpupool %s: %v\n", runner.SuiteArg, err)
		return 2
	}
	return suite.RunLinked(ss[0], args)
}
