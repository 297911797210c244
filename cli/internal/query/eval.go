package query

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Value is what a name or an expression stands for: string, float64,
// bool, []Value, or Scope (an object: a unit, an application, ...).
type Value any

// Scope is the names a query sees, and an object's fields.
type Scope map[string]Value

// EvalError is a query that parses but cannot be evaluated against a
// scope: an unknown name or function, a value of the wrong type.
type EvalError struct{ Msg string }

func (e *EvalError) Error() string { return "query: " + e.Msg }

func evalErrorf(format string, args ...any) error {
	return &EvalError{Msg: fmt.Sprintf(format, args...)}
}

// env is the scope an expression is evaluated in, with the lambda
// parameters bound around it.
type env struct {
	scope  Scope
	param  string
	value  Value
	parent *env
}

func (e *env) lookup(name string) (Value, bool) {
	for ; e != nil; e = e.parent {
		if e.scope != nil {
			v, ok := e.scope[name]
			return v, ok
		}
		if e.param == name {
			return e.value, true
		}
	}
	return nil, false
}

// Eval evaluates x against s; the result must be a boolean.
func Eval(x Expr, s Scope) (bool, error) {
	v, err := x.eval(&env{scope: s})
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, evalErrorf("%s is %s, not a condition (true or false)", x, describe(v))
	}
	return b, nil
}

func (l *literal) eval(*env) (Value, error) { return l.v, nil }

func (g *group) eval(e *env) (Value, error) { return g.x.eval(e) }

func (n *name) eval(e *env) (Value, error) {
	if v, ok := e.lookup(n.name); ok {
		return v, nil
	}
	var root Scope
	for r := e; r != nil; r = r.parent {
		root = r.scope
	}
	return nil, evalErrorf("unknown name %q; known: %s", n.name, strings.Join(names(root), ", "))
}

func (f *field) eval(e *env) (Value, error) {
	v, err := f.x.eval(e)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(Scope)
	if !ok {
		return nil, evalErrorf("%s is %s, which has no field %q", f.x, describe(v), f.name)
	}
	fv, ok := obj[f.name]
	if !ok {
		return nil, evalErrorf("%s has no field %q; its fields: %s", f.x, f.name, strings.Join(names(obj), ", "))
	}
	return fv, nil
}

func (n *negation) eval(e *env) (Value, error) {
	b, err := evalBool(n.x, e)
	return !b, err
}

func (l *logical) eval(e *env) (Value, error) {
	a, err := evalBool(l.l, e)
	if err != nil {
		return nil, err
	}
	if (l.op == "&&" && !a) || (l.op == "||" && a) {
		return a, nil
	}
	return evalBool(l.r, e)
}

func evalBool(x Expr, e *env) (bool, error) {
	v, err := x.eval(e)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, evalErrorf("%s is %s, not true or false", x, describe(v))
	}
	return b, nil
}

func (c *compare) eval(e *env) (Value, error) {
	l, err := c.l.eval(e)
	if err != nil {
		return nil, err
	}
	r, err := c.r.eval(e)
	if err != nil {
		return nil, err
	}
	var cmp int
	switch lv := l.(type) {
	case string:
		rv, ok := r.(string)
		if !ok {
			return nil, c.mismatch(l, r)
		}
		cmp = strings.Compare(lv, rv)
	case float64:
		rv, ok := r.(float64)
		if !ok {
			return nil, c.mismatch(l, r)
		}
		switch {
		case lv < rv:
			cmp = -1
		case lv > rv:
			cmp = 1
		}
	case bool:
		rv, ok := r.(bool)
		if !ok || (c.op != "==" && c.op != "!=") {
			return nil, c.mismatch(l, r)
		}
		if lv != rv {
			cmp = 1
		}
	default:
		return nil, c.mismatch(l, r)
	}
	switch c.op {
	case "==":
		return cmp == 0, nil
	case "!=":
		return cmp != 0, nil
	case "<":
		return cmp < 0, nil
	case "<=":
		return cmp <= 0, nil
	case ">":
		return cmp > 0, nil
	}
	return cmp >= 0, nil
}

func (c *compare) mismatch(l, r Value) error {
	return evalErrorf("cannot compare %s with %s in %s", describe(l), describe(r), c)
}

func (l *lambda) eval(*env) (Value, error) {
	return nil, evalErrorf("%s: a function (x => ...) is only an argument of forEach", l)
}

func (c *call) eval(e *env) (Value, error) {
	want := map[string]int{"len": 1, "forEach": 2, "startsWith": 2, "endsWith": 2}
	n, ok := want[c.fn]
	if !ok {
		return nil, evalErrorf("unknown function %q; known: endsWith, forEach, len, startsWith", c.fn)
	}
	if len(c.args) != n {
		return nil, evalErrorf("%s takes %d argument(s), given %d", c.fn, n, len(c.args))
	}
	if c.fn == "forEach" {
		return c.forEach(e)
	}
	args := make([]Value, n)
	for i, a := range c.args {
		v, err := a.eval(e)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch c.fn {
	case "len":
		switch v := args[0].(type) {
		case []Value:
			return float64(len(v)), nil
		case string:
			return float64(utf8.RuneCountInString(v)), nil
		}
		return nil, evalErrorf("len of %s: want a list or a string", describe(args[0]))
	}
	s, ok1 := args[0].(string)
	affix, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, evalErrorf("%s takes two strings, given %s and %s", c.fn, describe(args[0]), describe(args[1]))
	}
	if c.fn == "startsWith" {
		return strings.HasPrefix(s, affix), nil
	}
	return strings.HasSuffix(s, affix), nil
}

// forEach is true when the lambda holds for every element of the list.
func (c *call) forEach(e *env) (Value, error) {
	lv, err := c.args[0].eval(e)
	if err != nil {
		return nil, err
	}
	list, ok := lv.([]Value)
	if !ok {
		return nil, evalErrorf("forEach over %s: want a list", describe(lv))
	}
	fn, ok := c.args[1].(*lambda)
	if !ok {
		return nil, evalErrorf("forEach's second argument must be a function, such as unit => unit.name == \"kv/0\"")
	}
	for _, item := range list {
		b, err := evalBool(fn.body, &env{param: fn.param, value: item, parent: e})
		if err != nil || !b {
			return false, err
		}
	}
	return true, nil
}

// describe names a value's type for error messages.
func describe(v Value) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []Value:
		return fmt.Sprintf("a list of %d", len(v))
	case Scope:
		return "an object"
	}
	return "nothing"
}

func names(s Scope) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
