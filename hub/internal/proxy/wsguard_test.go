package proxy

import (
	"encoding/binary"
	"errors"
	"testing"
)

// frame is a websocket frame header for a payload of n bytes (masked: a
// client's), followed by the payload.
func frame(fin bool, opcode byte, n int, masked bool) []byte {
	b := []byte{opcode}
	if fin {
		b[0] |= 0x80
	}
	mask := byte(0)
	if masked {
		mask = 0x80
	}
	switch {
	case n < 126:
		b = append(b, mask|byte(n))
	case n < 1<<16:
		b = append(b, mask|126, 0, 0)
		binary.BigEndian.PutUint16(b[2:], uint16(n))
	default:
		b = append(b, mask|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if masked {
		b = append(b, 1, 2, 3, 4)
	}
	return append(b, make([]byte, n)...)
}

// TestFrameScannerBoundsMessages: the scanner follows frames split
// anywhere across writes, sums a fragmented message's frames (control
// frames between them do not count), and refuses the first message over
// its bound, and a control frame over 125 bytes.
func TestFrameScannerBoundsMessages(t *testing.T) {
	feedBytewise := func(s *frameScanner, b []byte) error {
		for i := range b {
			if err := s.feed(b[i : i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	var stream []byte
	stream = append(stream, frame(true, 1, 1000, true)...)   // a whole message
	stream = append(stream, frame(false, 2, 600, true)...)   // fragments of one message of 1000 + a ping
	stream = append(stream, frame(true, 9, 10, true)...)     // ping between fragments
	stream = append(stream, frame(true, 0, 400, true)...)    // last fragment: 1000 in all
	stream = append(stream, frame(true, 2, 70000, false)...) // a 16-bit length over the bound
	s := frameScanner{max: 1000}
	if err := feedBytewise(&s, stream[:len(stream)-70000-4]); err != nil {
		t.Fatalf("messages within the bound: %v", err)
	}
	if err := feedBytewise(&s, stream[len(stream)-70000-4:]); !errors.Is(err, errMessageTooBig) {
		t.Fatalf("a message over the bound: %v", err)
	}
	s = frameScanner{max: 1000}
	if err := s.feed(append(frame(false, 1, 600, true), frame(true, 0, 401, true)...)); !errors.Is(err, errMessageTooBig) {
		t.Fatalf("fragments over the bound together: %v", err)
	}
	s = frameScanner{max: 1 << 30}
	if err := s.feed(frame(true, 9, 126, true)); !errors.Is(err, errMessageTooBig) {
		t.Fatalf("a control frame of 126 bytes: %v", err)
	}
	s = frameScanner{max: 1 << 10}
	if err := s.feed(frame(true, 2, 1<<16, false)[:10]); !errors.Is(err, errMessageTooBig) {
		t.Fatalf("a 64-bit length over the bound, payload not come yet: %v", err)
	}
}
