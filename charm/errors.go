package charm

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is matched (via errors.Is) by every error that reports bad
// charm or bundle content, as opposed to I/O failures.
var ErrInvalid = errors.New("invalid charm content")

// Error is one problem found in a charm or bundle file. File is the file name
// inside the charm (for example "metadata.yaml"), Field a dotted path to the
// offending value (for example "provides.db.interface"); either may be empty.
type Error struct {
	File  string
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is makes every *Error match ErrInvalid so callers need not know the
// concrete type to distinguish bad input from other failures.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// maxProblems bounds how many problems one file reports: enough for a user to
// fix several mistakes at once, small enough that hostile input cannot build
// a gigantic error message.
const maxProblems = 50

// problems collects validation errors for one file so a user sees them all.
type problems struct {
	file string
	list []error
}

func (p *problems) add(field, format string, args ...any) {
	if len(p.list) >= maxProblems {
		return
	}
	p.list = append(p.list, &Error{File: p.file, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// merge appends problems reported elsewhere (for example by a nested parser).
func (p *problems) merge(err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			p.merge(e)
		}
		return
	}
	if len(p.list) < maxProblems {
		p.list = append(p.list, err)
	}
}

func (p *problems) ok() bool { return len(p.list) == 0 }

func (p *problems) err() error {
	switch len(p.list) {
	case 0:
		return nil
	case 1:
		return p.list[0]
	}
	return errors.Join(p.list...)
}

// invalid builds a single *Error.
func invalid(file, field, format string, args ...any) error {
	return &Error{File: file, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// join builds a dotted field path, skipping empty parts.
func join(parts ...string) string {
	out := parts[:0:0]
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, ".")
}
