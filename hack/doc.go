// Package hack holds no code: its tests keep the build scripts beside it
// honest (see versions_test.go).
package hack
