package query

import (
	"errors"
	"strings"
	"testing"
)

func app() Scope {
	unit := func(name, workload string, leader bool) Scope {
		return Scope{"name": name, "life": "alive", "workload-status": workload, "agent-status": "idle", "leader": leader}
	}
	return Scope{
		"name": "kv", "life": "alive", "status": "active", "scale": float64(2),
		"units":    []Value{unit("kv/0", "active", true), unit("kv/1", "maintenance", false)},
		"machines": []Value{},
	}
}

func TestEval(t *testing.T) {
	for q, want := range map[string]bool{
		`life=="alive" && status=="active"`:                                      true,
		`life=="alive" && status=="blocked"`:                                     false,
		`name=="kv" && (status=="blocked" || status=="active")`:                  true,
		`len(units) == 2`:                                                        true,
		`len(units) >= 3`:                                                        false,
		`scale > 1 && scale <= 2 && scale != 3 && scale < 2.5`:                   true,
		`forEach(units, unit => startsWith(unit.name, "kv/"))`:                   true,
		`forEach(units, unit => unit.workload-status == "active")`:               false,
		`forEach(machines, m => m.life == "dead")`:                               true, // as Juju: true for none
		`!forEach(units, u => u.leader)`:                                         true,
		`endsWith(name, 'v') && !endsWith(name, "x")`:                            true,
		`len(name) == 2 && "b" > "a" && true != false`:                           true,
		`forEach(units, u => forEach(units, v => v.life == u.life)) && -1 < 0`:   true,
		`forEach(units, unit => unit.agent-status=="idle" && len(unit.name)==4)`: true,
	} {
		x, err := Parse(q)
		if err != nil {
			t.Errorf("Parse(%s): %v", q, err)
			continue
		}
		got, err := Eval(x, app())
		if err != nil || got != want {
			t.Errorf("Eval(%s) = %v, %v; want %v", q, got, err, want)
		}
		// The printed form parses back to the same query.
		if y, err := Parse(x.String()); err != nil || y.String() != x.String() {
			t.Errorf("%s printed as %s, which parses as %v (%v)", q, x, y, err)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	for q, says := range map[string]string{
		`life="alive"`:            "compare with '=='",
		`life=="alive" &&`:        "expected a value, found the end of the query",
		`status == "active`:       "unterminated string",
		`len(units`:               "expected ',' or ')'",
		`a == b == c`:             "do not chain",
		`unit.`:                   "expected a field name",
		`status == "a" status`:    `unexpected "status"`,
		`x @ y`:                   "unexpected character '@'",
		strings.Repeat("(", 100):  "nested deeper than",
		strings.Repeat("a", 5000): "longer than 4096 bytes",
		`"\q"`:                    `unknown escape \q`,
		`forEach(units, u =>)`:    "expected a value",
		`99999999999999999999` + strings.Repeat("9", 400): "bad number",
	} {
		_, err := Parse(q)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), says) {
			t.Errorf("Parse(%.40s) = %v; want a syntax error saying %q", q, err, says)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for q, says := range map[string]string{
		`workload-status == "active"`:        `unknown name "workload-status"; known: life, machines, name, scale, status, units`,
		`units.name == "kv"`:                 `units is a list of 2, which has no field "name"`,
		`forEach(units, u => u.nope == "x")`: `u has no field "nope"; its fields: agent-status, leader, life, name, workload-status`,
		`len(units) == "2"`:                  `cannot compare the number 2 with the string "2"`,
		`status`:                             `status is the string "active", not a condition`,
		`count(units) == 2`:                  `unknown function "count"`,
		`forEach(units, true)`:               "must be a function",
		`forEach(name, u => true)`:           "want a list",
		`startsWith(scale, "k")`:             "takes two strings",
		`len(scale) == 1`:                    "want a list or a string",
		`life && true`:                       "not true or false",
		`true < false`:                       "cannot compare",
	} {
		x, err := Parse(q)
		if err != nil {
			t.Errorf("Parse(%s): %v", q, err)
			continue
		}
		_, err = Eval(x, app())
		var ee *EvalError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), says) {
			t.Errorf("Eval(%s) = %v; want an error saying %q", q, err, says)
		}
	}
}

// FuzzParse: any input either parses or is a SyntaxError, never a panic;
// what parses prints as a query that parses to the same print; and
// evaluating it against a scope never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`life=="alive" && status=="active"`, `len(units) == 4`,
		`forEach(units, unit => unit.workload-status == "active" && startsWith(unit.name, "kv"))`,
		`!(a || b) && c != 'x\'y' && n >= -1.5`, `f()`, `x.y.z`, `"\n\t\\"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		x, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %T %v, want a SyntaxError", src, err, err)
			}
			return
		}
		y, err := Parse(x.String())
		if err != nil || y.String() != x.String() {
			t.Fatalf("Parse(%q) printed %q, which parses as %v (%v)", src, x, y, err)
		}
		_, _ = Eval(x, app())
	})
}
