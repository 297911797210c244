package pgserver

import "testing"

func TestCompareVersions(t *testing.T) {
	if compareVersions("16", "9") <= 0 || compareVersions("15.2", "15.10") >= 0 || compareVersions("15", "15.0") != 0 {
		t.Fatal("compareVersions orders numerically")
	}
}
