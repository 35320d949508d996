package sundial

import (
	"os"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/leaktest"
)

// TestMain fails the package's tests if a goroutine they started outlives them; run as the
// child of TestMapReduceKilledNode it is the node that test kills.
func TestMain(m *testing.M) {
	if dsn := os.Getenv(mapChildEnv); dsn != "" {
		runMapChild(dsn)
		return
	}
	leaktest.VerifyTestMain(m)
}
