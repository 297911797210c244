package testkit

import (
	"testing"

	"go.uber.org/goleak"
)

// baseLeakIgnores are goroutines started by libraries the repository uses
// that live for the whole process by design and are not leaks of the code
// under test.
func baseLeakIgnores() []goleak.Option {
	return []goleak.Option{
		// glog / klog style flush daemons and opencensus workers, pulled in
		// transitively by some clients; they never exit.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	}
}

// CheckLeaks fails t if, once the test and every cleanup registered after
// this call have finished, goroutines remain that did not exist when
// CheckLeaks was called. Call it first in a test so its check runs last.
//
// It cannot be used in tests that call t.Parallel: goroutines of the tests
// running alongside would be reported.
func CheckLeaks(t testing.TB, opts ...goleak.Option) {
	t.Helper()
	all := append(baseLeakIgnores(), goleak.IgnoreCurrent())
	all = append(all, opts...)
	t.Cleanup(func() {
		if err := goleak.Find(all...); err != nil {
			t.Errorf("testkit: goroutine leak: %v", err)
		}
	})
}

// VerifyTestMain runs the package's tests and then fails the binary if any
// goroutine outlives them. Use it as the whole body of TestMain:
//
//	func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(m, append(baseLeakIgnores(), opts...)...)
}
