package freeport

import "testing"

func TestReserveNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p, err := Reserve()
		if err != nil {
			t.Fatal(err)
		}
		if p <= 0 || seen[p] {
			t.Fatalf("port %d handed out twice or invalid", p)
		}
		seen[p] = true
	}
}
