package testkit

import "testing"

func TestMain(m *testing.M) { VerifyTestMain(m) }
