package indexer

import (
	"testing"
	"time"
)

// TestNewRefusesAnIncompleteConfig: an indexer without its store, clock,
// logger or hooks, or with bounds that make no sense, is refused at
// construction.
func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{ResyncEvery: time.Hour, Poll: time.Second, MaxEventFrame: 1 << 20},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}
