package pool

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/harness"
)

func TestMain(m *testing.M) { harness.RunSuite(m, Suite) }
