package proxy

// statusStamps finds, in a status answer (api.FullStatus as JSON), the
// two values that change without the model changing: the top-level
// "index" (a number) and the timestamp of the top-level "controller"
// object (a string, quotes included). It reports false for anything else:
// not a JSON object, a value missing, of another kind, or found twice.
// It reads only the object's structure; it does not check the rest of it
// (the controller wrote it; the hub relays it as it came).
func statusStamps(b []byte) (index, stamp span, ok bool) {
	var foundIndex, foundStamp bool
	ok = members(b, 0, func(key []byte, v span) bool {
		switch string(key) {
		case "index":
			if foundIndex || !number(b[v.start:v.end]) {
				return false
			}
			index, foundIndex = v, true
		case "controller":
			if b[v.start] != '{' {
				return false
			}
			return members(b[:v.end], v.start, func(key []byte, t span) bool {
				if string(key) != "timestamp" {
					return true
				}
				if foundStamp || b[t.start] != '"' {
					return false
				}
				stamp, foundStamp = t, true
				return true
			}) >= 0
		}
		return true
	}) >= 0
	return index, stamp, ok && foundIndex && foundStamp
}

// members calls fn with the key (unquoted, escapes left as they are) and
// value span of each member of the JSON object starting at b[i] (after
// any white space), and returns the offset just past it, or -1 when it is
// not an object or fn returns false.
func members(b []byte, i int, fn func(key []byte, v span) bool) int {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end := skipString(b, i)
		if end < 0 {
			return -1
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		start := skipSpace(b, i+1)
		end = skipValue(b, start)
		if end < 0 || !fn(key, span{start, end}) {
			return -1
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '}':
			return i + 1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return -1
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset past the string starting at b[i] (a
// quote), or -1 when it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the offset past the value starting at b[i], or -1:
// strings, objects and arrays by their structure (brackets nested and
// matched, strings skipped), anything else up to the next delimiter.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var stack []byte
		for ; i < len(b); i++ {
			switch c := b[i]; c {
			case '"':
				end := skipString(b, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				stack = append(stack, c+2) // '}' and ']' follow their openers by 2
			case '}', ']':
				if len(stack) == 0 || stack[len(stack)-1] != c {
					return -1
				}
				if stack = stack[:len(stack)-1]; len(stack) == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' &&
		b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// number reports whether v is a non-negative integer, as an index is.
func number(v []byte) bool { return allDigits(string(v)) }
