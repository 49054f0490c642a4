package dedupe_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The middleware tests run handlers on goroutines and a real server; none
// may outlive its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
