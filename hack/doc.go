// Package hack holds no code: its tests keep the repository's rules that
// no compiler checks: the module versions the build scripts rely on
// (versions_test.go) and the layering of the packages (layering_test.go).
package hack
