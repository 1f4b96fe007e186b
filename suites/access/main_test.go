package access

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/suite"
)

func TestMain(m *testing.M) { suite.GoTest(m, Suite) }
