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
	q := [38]byte{0: '"', 9: '-', 14: '-', 19: '-', 24: '-', 37: '"'} // written whole, appended once
	for i, c := range u {
		p := uuidDigits[i]
		q[p], q[p+1] = hexdigits[c>>4], hexdigits[c&0xf]
	}
	return append(b, q[:]...)
}

// uuidDigits is where each byte of a UUID goes in its quoted form.
var uuidDigits = [16]uint8{1, 3, 5, 7, 10, 12, 15, 17, 20, 22, 25, 27, 29, 31, 33, 35}

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
	var q [30]byte // "2006-01-02T15:04:05.999999999Z", written whole
	two(q[:], 0, y/100)
	two(q[:], 2, y%100)
	q[4] = '-'
	two(q[:], 5, int(mo))
	q[7] = '-'
	two(q[:], 8, d)
	q[10] = 'T'
	two(q[:], 11, h)
	q[13] = ':'
	two(q[:], 14, mi)
	q[16] = ':'
	two(q[:], 17, s)
	n := 19
	if ns := t.Nanosecond(); ns != 0 {
		q[n] = '.'
		for div := 100000000; ns != 0; div /= 10 { // trailing zeros dropped
			n++
			q[n] = byte('0' + ns/div)
			ns %= div
		}
		n++
	}
	q[n] = 'Z'
	return append(b, q[:n+1]...)
}

// two writes v (0-99) in two digits at q[i:].
func two(q []byte, i, v int) {
	const digits = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
		"4041424344454647484950515253545556575859606162636465666768697071727374757677787980818283848586878889" +
		"90919293949596979899"
	q[i], q[i+1] = digits[2*v], digits[2*v+1]
}
