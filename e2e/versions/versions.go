// Package versions pins the versions of the components a run is built
// from: the control plane, etcd, kwok and kind.
package versions

// hack/lib.sh pins the same values for the build; a unit test keeps the
// two in step.
const (
	Kube = "v1.37.2"
	Etcd = "v3.7.0"
	Kwok = "v0.8.0"
	Kind = "v0.33.0"
)
