package authn

import (
	"testing"
	"time"
)

// TestNewRefusesAnIncompleteConfig: authentication without its stores,
// issuer client or the hub's hooks is refused at construction.
func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	if _, err := New(t.Context(), Config{SessionTTL: time.Minute, RefreshTTL: time.Hour, PrincipalTTL: time.Second}); err == nil {
		t.Fatal("New accepted a Config without its dependencies")
	}
}
