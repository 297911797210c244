package query

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tString
	tNumber
	tCmp // == != < <= > >=
	tAnd
	tOr
	tNot
	tDot
	tComma
	tLParen
	tRParen
	tArrow
)

type token struct {
	kind tokKind
	text string // an identifier, a string's value, a number, an operator
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "the end of the query"
	case tString:
		return fmt.Sprintf("string %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func isLetter(c byte) bool { return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// lex splits src into tokens, ending with tEOF.
func lex(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		start := i
		two := ""
		if i+1 < len(src) {
			two = src[i : i+2]
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case isLetter(c):
			i++
			for i < len(src) && (isLetter(src[i]) || isDigit(src[i]) || (src[i] == '-' && i+1 < len(src) && (isLetter(src[i+1]) || isDigit(src[i+1])))) {
				i++
			}
			toks = append(toks, token{tIdent, src[start:i], start})
			continue
		case isDigit(c) || (c == '-' && i+1 < len(src) && isDigit(src[i+1])):
			i++
			for i < len(src) && isDigit(src[i]) {
				i++
			}
			if i+1 < len(src) && src[i] == '.' && isDigit(src[i+1]) {
				i++
				for i < len(src) && isDigit(src[i]) {
					i++
				}
			}
			toks = append(toks, token{tNumber, src[start:i], start})
			continue
		case c == '"' || c == '\'':
			s, n, err := lexString(src[i:])
			if err != nil {
				return nil, &SyntaxError{Pos: start, Msg: err.Error()}
			}
			toks = append(toks, token{tString, s, start})
			i += n
			continue
		case two == "==" || two == "!=" || two == "<=" || two == ">=":
			toks = append(toks, token{tCmp, two, start})
		case two == "&&":
			toks = append(toks, token{tAnd, two, start})
		case two == "||":
			toks = append(toks, token{tOr, two, start})
		case two == "=>":
			toks = append(toks, token{tArrow, two, start})
		case c == '<' || c == '>':
			toks = append(toks, token{tCmp, string(c), start})
			i++
			continue
		case c == '!':
			toks = append(toks, token{tNot, "!", start})
			i++
			continue
		case c == '.' || c == ',' || c == '(' || c == ')':
			kind := map[byte]tokKind{'.': tDot, ',': tComma, '(': tLParen, ')': tRParen}[c]
			toks = append(toks, token{kind, string(c), start})
			i++
			continue
		case c == '=':
			return nil, &SyntaxError{Pos: start, Msg: "'=' is not an operator: compare with '=='"}
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, &SyntaxError{Pos: start, Msg: fmt.Sprintf("unexpected character %q", r)}
		}
		i += 2 // the two-character operators
	}
	return append(toks, token{kind: tEOF, pos: len(src)}), nil
}

// lexString reads a quoted string at the start of s: its value and the
// bytes it took. Backslash escapes the quote, a backslash, n and t.
func lexString(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == q:
			if !utf8.ValidString(b.String()) {
				return "", 0, fmt.Errorf("string is not valid UTF-8")
			}
			return b.String(), i + 1, nil
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\\', '"', '\'':
				b.WriteByte(e)
			default:
				return "", 0, fmt.Errorf("unknown escape \\%c in a string", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}
