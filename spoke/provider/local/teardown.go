package local

import (
	"time"

	"github.com/droverhq/drover/internal/proctree"
)

// KillProcessesUnder powers off the local machines under dir (one machine
// directory, or a directory of models' machine directories): it ends every
// process that works in or names a path under it (internal/proctree) and,
// once none is left, removes the machines' boot markers, so their next
// start is a new boot (boot.go). This is how a local machine is powered off
// when there is no time for hooks (kill-controller, forced removal, droverd
// dev's Ctrl-C). It returns how many processes are left.
func KillProcessesUnder(dir string, grace time.Duration) int {
	left := proctree.KillUnder(dir, grace)
	if left == 0 {
		forgetBoots(dir)
	}
	return left
}
