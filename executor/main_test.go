package executor_test

import (
	"testing"

	"github.com/sundial-scheduler/sundial/internal/leaktest"
)

// TestMain fails the package's tests if any goroutine they started is still running at the
// end: a Stop that returns before its goroutines end is a bug.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}
