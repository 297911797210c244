// Package query is the goal-state language of 'drover wait-for', the
// subset of Juju's wait-for query DSL that scripts use:
//
//	life=="alive" && status=="active"
//	len(units) == 3
//	forEach(units, unit => unit.workload-status == "active" && startsWith(unit.name, "kv"))
//
// An expression is parsed once (Parse) and evaluated against a Scope as
// often as the watched entity changes (Eval). Names may contain hyphens
// (workload-status), as Juju's do; there is no arithmetic, so "a-b" is
// always one name. Strings are quoted with " or '; numbers are decimal;
// true and false are booleans. Operators, loosest first: ||, &&, !, then
// ==, !=, <, <=, >, >= (not chained). Functions: len(list or string),
// forEach(list, x => condition) (true when every element satisfies it,
// so also for an empty list, as in Juju), startsWith(s, prefix) and
// endsWith(s, suffix).
//
// Invariants: Parse never panics and bounds its input (MaxLen bytes,
// MaxDepth nesting), so any string a user types is safe; a parsed Expr's
// String parses back to an equal Expr (FuzzParse checks both).
package query

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds on what Parse accepts.
const (
	MaxLen   = 4096
	MaxDepth = 64
)

// SyntaxError is a query that does not parse; Pos is the byte offset.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid query at offset %d: %s", e.Pos, e.Msg)
}

// Expr is a parsed query.
type Expr interface {
	String() string
	eval(s *env) (Value, error)
}

// Parse parses a query.
func Parse(src string) (Expr, error) {
	if len(src) > MaxLen {
		return nil, &SyntaxError{Pos: MaxLen, Msg: fmt.Sprintf("longer than %d bytes", MaxLen)}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("unexpected %s", t)}
	}
	return e, nil
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) expect(kind tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("expected %s, found %s", what, t)}
	}
	return t, nil
}

func (p *parser) deeper(depth int) error {
	if depth > MaxDepth {
		return &SyntaxError{Pos: p.peek().pos, Msg: fmt.Sprintf("nested deeper than %d", MaxDepth)}
	}
	return nil
}

func (p *parser) or(depth int) (Expr, error) {
	if err := p.deeper(depth); err != nil {
		return nil, err
	}
	l, err := p.and(depth + 1)
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tOr {
		p.next()
		r, err := p.and(depth + 1)
		if err != nil {
			return nil, err
		}
		l = &logical{op: "||", l: l, r: r}
	}
	return l, nil
}

func (p *parser) and(depth int) (Expr, error) {
	l, err := p.not(depth + 1)
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tAnd {
		p.next()
		r, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		l = &logical{op: "&&", l: l, r: r}
	}
	return l, nil
}

func (p *parser) not(depth int) (Expr, error) {
	if err := p.deeper(depth); err != nil {
		return nil, err
	}
	if p.peek().kind == tNot {
		p.next()
		x, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return &negation{x: x}, nil
	}
	return p.comparison(depth + 1)
}

func (p *parser) comparison(depth int) (Expr, error) {
	l, err := p.postfix(depth + 1)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tCmp {
		p.next()
		r, err := p.postfix(depth + 1)
		if err != nil {
			return nil, err
		}
		if n := p.peek(); n.kind == tCmp {
			return nil, &SyntaxError{Pos: n.pos, Msg: "comparisons do not chain; join them with &&"}
		}
		return &compare{op: t.text, l: l, r: r}, nil
	}
	return l, nil
}

// postfix is a primary followed by .name selections.
func (p *parser) postfix(depth int) (Expr, error) {
	x, err := p.primary(depth + 1)
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tDot {
		p.next()
		t, err := p.expect(tIdent, "a field name after '.'")
		if err != nil {
			return nil, err
		}
		x = &field{x: x, name: t.text}
	}
	return x, nil
}

func (p *parser) primary(depth int) (Expr, error) {
	if err := p.deeper(depth); err != nil {
		return nil, err
	}
	t := p.next()
	switch t.kind {
	case tString:
		return &literal{v: t.text}, nil
	case tNumber:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("bad number %q", t.text)}
		}
		return &literal{v: f}, nil
	case tLParen:
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, "')'"); err != nil {
			return nil, err
		}
		return &group{x: x}, nil
	case tIdent:
		switch t.text {
		case "true":
			return &literal{v: true}, nil
		case "false":
			return &literal{v: false}, nil
		}
		if p.peek().kind == tLParen {
			return p.call(t, depth+1)
		}
		return &name{name: t.text}, nil
	}
	return nil, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("expected a value, found %s", t)}
}

// call parses fn(arg, ...); an argument may be a lambda, x => expr.
func (p *parser) call(fn token, depth int) (Expr, error) {
	p.next() // (
	c := &call{fn: fn.text, pos: fn.pos}
	if p.peek().kind == tRParen {
		p.next()
		return c, nil
	}
	for {
		var arg Expr
		if p.peek().kind == tIdent && p.toks[p.i+1].kind == tArrow {
			param := p.next().text
			p.next() // =>
			body, err := p.or(depth + 1)
			if err != nil {
				return nil, err
			}
			arg = &lambda{param: param, body: body}
		} else {
			x, err := p.or(depth + 1)
			if err != nil {
				return nil, err
			}
			arg = x
		}
		c.args = append(c.args, arg)
		t := p.next()
		switch t.kind {
		case tRParen:
			return c, nil
		case tComma:
			continue
		}
		return nil, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("expected ',' or ')' in the arguments of %s, found %s", fn.text, t)}
	}
}

// The syntax tree. String prints a node so that it parses back the same.

type literal struct{ v Value }

func (l *literal) String() string {
	switch v := l.v.(type) {
	case string:
		return quote(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(l.v)
}

type name struct{ name string }

func (n *name) String() string { return n.name }

type field struct {
	x    Expr
	name string
}

func (f *field) String() string { return f.x.String() + "." + f.name }

type group struct{ x Expr }

func (g *group) String() string { return "(" + g.x.String() + ")" }

type negation struct{ x Expr }

func (n *negation) String() string { return "!" + n.x.String() }

type logical struct {
	op   string
	l, r Expr
}

func (l *logical) String() string { return l.l.String() + " " + l.op + " " + l.r.String() }

type compare struct {
	op   string
	l, r Expr
}

func (c *compare) String() string { return c.l.String() + " " + c.op + " " + c.r.String() }

type call struct {
	fn   string
	pos  int
	args []Expr
}

func (c *call) String() string {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = a.String()
	}
	return c.fn + "(" + strings.Join(args, ", ") + ")"
}

type lambda struct {
	param string
	body  Expr
}

func (l *lambda) String() string { return l.param + " => " + l.body.String() }

// quote writes s as a string literal lex reads back as s.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}
