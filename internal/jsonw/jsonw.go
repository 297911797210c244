// Package jsonw appends JSON without reflection, for hot paths that encode
// many small objects (agent state frames, model listings). Every appender
// produces exactly what encoding/json would for the same value; the tests
// of its callers compare the two.
package jsonw

import (
	"encoding/json"
	"strconv"
	"time"
)

// String appends s quoted as encoding/json does: printable ASCII other
// than '"', '\\', '<', '>' and '&' is copied, anything else takes the slow
// path through json.Marshal.
func String[S ~string | ~[]byte](b []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			data, _ := json.Marshal(string(s)) // a string always marshals
			return append(b, data...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plain marks the bytes encoding/json copies into a string unchanged.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Field appends `"name":` after a comma unless first.
func Field(b []byte, name string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// UUID appends u quoted in its canonical form
// ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"), as uuid.UUID.String writes it.
func UUID(b []byte, u [16]byte) []byte {
	const hexdigits = "0123456789abcdef"
	b = append(b, '"')
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexdigits[c>>4], hexdigits[c&0xf])
	}
	return append(b, '"')
}

// Int appends i.
func Int(b []byte, i int64) []byte { return strconv.AppendInt(b, i, 10) }

// Uint appends u.
func Uint(b []byte, u uint64) []byte { return strconv.AppendUint(b, u, 10) }

// Time appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted). A year outside [0,9999], which MarshalJSON refuses,
// takes the slow path and is written as null.
func Time(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return append(b, "null"...)
	}
	b = append(b, '"')
	if loc := t.Location(); loc == time.UTC || loc == time.Local && localIsUTC {
		b = appendUTC(b, t)
	} else {
		b = t.AppendFormat(b, time.RFC3339Nano)
	}
	return append(b, '"')
}

// localIsUTC is whether time.Local is UTC under another name, as on most
// servers, where PostgreSQL's timestamps arrive in time.Local.
var localIsUTC = func() bool {
	name, off := time.Now().Zone()
	return off == 0 && (name == "UTC" || name == "")
}()

// appendUTC appends t (in UTC, year 0-9999) as time.RFC3339Nano does,
// without AppendFormat's layout interpretation.
func appendUTC(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b = pad(b, y, 4)
	b = pad(append(b, '-'), int(mo), 2)
	b = pad(append(b, '-'), d, 2)
	b = pad(append(b, 'T'), h, 2)
	b = pad(append(b, ':'), mi, 2)
	b = pad(append(b, ':'), s, 2)
	if ns := t.Nanosecond(); ns != 0 {
		b = append(b, '.')
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		b = pad(b, ns, digits)
	}
	return append(b, 'Z')
}

// pad appends v, which must be non-negative, in at least width digits.
func pad(b []byte, v, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v >= 10 || width > 1 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		width--
	}
	i--
	buf[i] = byte('0' + v)
	return append(b, buf[i:]...)
}
