package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/upstream"
)

// versionCmd prints gpupool's own version and every component a run uses,
// so a report, an issue or a certification names exactly what ran.
func versionCmd(args []string) error {
	fs := flag.NewFlagSet("gpupool version", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "gpupool\t%s\n", ownVersion())
	fmt.Fprintf(tw, "go\t%s\n", runtime.Version())
	fmt.Fprintf(tw, "kubernetes\t%s\n", harness.KubeVersion)
	fmt.Fprintf(tw, "etcd\t%s\n", harness.EtcdVersion)
	fmt.Fprintf(tw, "kwok\t%s\n", harness.KwokVersion)
	fmt.Fprintf(tw, "kind\t%s\n", harness.KindVersion)
	fmt.Fprintf(tw, "gpu-operator (CRD, samples, default MIG config)\t%s\n", upstream.GPUOperatorVersion())
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
