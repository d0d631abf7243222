package ops

import (
	"testing"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m) }
