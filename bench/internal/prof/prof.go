// Package prof starts and stops the CPU profiles the bench programs write
// on request (-cpuprofile).
package prof

import (
	"errors"
	"os"
	"runtime/pprof"
)

// StartCPU starts a CPU profile of this process into path. stop ends it and
// closes the file; with path "" nothing is profiled and stop does nothing.
func StartCPU(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
