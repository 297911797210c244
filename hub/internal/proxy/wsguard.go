package proxy

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// A websocket the hub relays is spliced byte for byte, so neither end's
// read limit protects the other: a client could send a controller one
// endless message, and a controller a client. The splice reads the frame
// headers going each way and ends the connection at the first message
// over its side's bound, telling the client why (close 1009, message too
// big) when that is possible.

const (
	// maxClientMessage bounds a message from a client: watches and event
	// streams read nothing from it but a close, a ping or a pong.
	maxClientMessage = 64 << 10
	// maxControllerMessage bounds a message from a controller (a watch's
	// reset frame carries a whole model).
	maxControllerMessage = 64 << 20
)

// errMessageTooBig ends a spliced websocket whose message is over its
// side's bound.
var errMessageTooBig = errors.New("websocket message over the hub's bound")

// frameScanner follows the frames of one direction of a websocket byte
// stream and sums each message's payload.
type frameScanner struct {
	max       uint64
	hdr       [14]byte
	n         int    // header bytes held
	remaining uint64 // payload bytes of the current frame still to come
	message   uint64 // payload bytes of the current message so far
}

// feed scans p, the next bytes of the stream.
func (s *frameScanner) feed(p []byte) error {
	for len(p) > 0 {
		if s.remaining > 0 {
			k := min(s.remaining, uint64(len(p)))
			s.remaining -= k
			p = p[k:]
			continue
		}
		s.hdr[s.n] = p[0]
		s.n++
		p = p[1:]
		if s.n < 2 {
			continue
		}
		need := 2
		switch s.hdr[1] & 0x7f {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if s.hdr[1]&0x80 != 0 {
			need += 4 // masking key
		}
		if s.n < need {
			continue
		}
		var length uint64
		switch l := s.hdr[1] & 0x7f; l {
		case 126:
			length = uint64(binary.BigEndian.Uint16(s.hdr[2:4]))
		case 127:
			length = binary.BigEndian.Uint64(s.hdr[2:10])
		default:
			length = uint64(l)
		}
		s.n = 0
		switch opcode := s.hdr[0] & 0x0f; {
		case opcode >= 8: // control frame, between a message's fragments
			if length > 125 {
				return errMessageTooBig
			}
		case opcode == 0: // continuation
			s.message += length
		default:
			s.message = length
		}
		if s.message > s.max {
			return errMessageTooBig
		}
		s.remaining = length
	}
	return nil
}

// guardedConn is the controller's side of a spliced websocket: what the
// client writes to it and what it reads from it are scanned. A client's
// message over the bound is not relayed: the controller's connection is
// closed, and the client is told 1009 before its connection ends.
type guardedConn struct {
	io.ReadWriteCloser
	toController, toClient frameScanner

	mu       sync.Mutex
	tooBig   bool // the client sent a message over the bound
	atFrame  bool // what was relayed to the client ends at a frame's end
	closeSet bool // the close frame was handed to the client
}

func guard(backend io.ReadWriteCloser) *guardedConn {
	return &guardedConn{ReadWriteCloser: backend, atFrame: true,
		toController: frameScanner{max: maxClientMessage}, toClient: frameScanner{max: maxControllerMessage}}
}

// Write relays the client's bytes to the controller, up to a message over
// the bound.
func (g *guardedConn) Write(p []byte) (int, error) {
	g.mu.Lock()
	if g.tooBig {
		g.mu.Unlock()
		return len(p), nil // dropped: the connection is ending
	}
	if err := g.toController.feed(p); err != nil {
		g.tooBig = true
		g.mu.Unlock()
		// Unblocks Read, which hands the client its close frame.
		g.ReadWriteCloser.Close()
		return len(p), nil
	}
	g.mu.Unlock()
	return g.ReadWriteCloser.Write(p)
}

// Read relays the controller's bytes to the client, up to a message over
// the bound; after a client's message over its bound, a close 1009.
func (g *guardedConn) Read(p []byte) (int, error) {
	n, err := g.ReadWriteCloser.Read(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tooBig {
		if g.closeSet || !g.atFrame || len(p) < len(closeTooBig) {
			return 0, io.EOF
		}
		g.closeSet = true
		return copy(p, closeTooBig), nil
	}
	if n > 0 {
		if ferr := g.toClient.feed(p[:n]); ferr != nil {
			return 0, ferr
		}
		g.atFrame = g.toClient.remaining == 0 && g.toClient.n == 0
	}
	return n, err
}

// closeTooBig is a server's close frame with status 1009 (message too
// big) and its reason.
var closeTooBig = func() []byte {
	reason := "message too big"
	b := []byte{0x88, byte(2 + len(reason)), 0x03, 0xf1}
	return append(b, reason...)
}()
