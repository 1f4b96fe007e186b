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
	"os"
	"os/signal"
	"syscall"
)

const usage = `gpupool checks a Kubernetes GPU pool contract.

Usage:
  gpupool run    [flags]   bring up a cluster, install the candidate, run the suites (exploration
                           included: --explore-seed, --explore-budget), report, tear down
  gpupool up     [flags]   bring up a cluster with the fleet and candidate and keep it until Ctrl-C
  gpupool mutants [flags]  run every broken candidate; pass only if each fails exactly the checks it lists
  gpupool certify --out DIR [flags]  run the contract and write a certification bundle (junit_01.xml, e2e.log,
                           PRODUCT.yaml, the AI Conformance mapping, the candidate's manifests and fingerprint)
  gpupool scale  [flags]   put fleets of thousands of GPU nodes under scheduler pressure; measure, check the contract in bulk
  gpupool explain NS/POD   say why a pod is Pending, in the pool contract's terms
  gpupool report RUN_DIR   write RUN_DIR/report.html from its summary.json (every run writes one)
  gpupool down             remove every cluster gpupool left on this machine
  gpupool checks           list the contract checks
  gpupool version          print gpupool's version and the version of every component it runs

Run 'gpupool <command> -h' for the flags of a command.
`

// exitError carries an exit code out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		err = runCmd(ctx, args)
	case "up":
		err = upCmd(ctx, args)
	case "down":
		err = downCmd(ctx, args)
	case "mutants":
		err = mutantsCmd(ctx, args)
	case "scale":
		err = scaleCmd(ctx, args)
	case "explain":
		err = explainCmd(ctx, args)
	case "version", "--version":
		err = versionCmd(args)
	case "certify":
		err = certifyCmd(ctx, args)
	case "report":
		err = reportCmd(args)
	case "checks":
		err = checksCmd(args)
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "gpupool: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	var ee exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		os.Exit(ee.code)
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "gpupool:", err)
		if ctx.Err() != nil {
			os.Exit(130)
		}
		os.Exit(2)
	}
}
