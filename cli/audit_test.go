package cli

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// TestPrintAudit: no entries are an empty JSON list; the table reads to
// the second and names each change's target; CSV is quoted as CSV.
func TestPrintAudit(t *testing.T) {
	var buf bytes.Buffer
	a := &App{Stdout: &buf}
	if err := a.printAudit(map[string]any{}, "json"); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Fatalf("no entries as json: %q %v", buf.String(), err)
	}
	entries := map[string]any{"entries": []any{
		map[string]any{"at": "2026-11-22T13:41:55.123456Z", "actor": "bob", "operation": "integrate",
			"details": map[string]any{"target": "web:db kv:kv"}, "model": "prod", "status": 201, "result": "ok"},
		map[string]any{"at": "2026-11-22T13:40:00Z", "actor": "al, ice", "operation": "grant",
			"details": map[string]any{"body": map[string]any{"user": "bob", "level": "read"}}, "status": 204, "result": "ok"},
	}}
	buf.Reset()
	if err := a.printAudit(entries, "tabular"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "2026-11-22 13:41:55Z  bob") || !strings.Contains(lines[1], "web:db kv:kv") ||
		!strings.Contains(lines[2], "grant  ") || !strings.Contains(lines[2], "bob read") {
		t.Errorf("table:\n%s", buf.String())
	}
	buf.Reset()
	if err := a.printAudit(entries, "csv"); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(rows) != 3 || rows[2][1] != "al, ice" || rows[1][0] != "2026-11-22T13:41:55.123456Z" {
		t.Errorf("csv %q: %v", rows, err)
	}
}
