package main

import (
	"testing"

	"github.com/sundial-scheduler/sundial/internal/leaktest"
)

// TestMain fails the package's tests if a goroutine they started outlives them.
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
