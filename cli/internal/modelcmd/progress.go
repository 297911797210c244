package modelcmd

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress reports a long operation. On a terminal it draws a spinner with
// the current step, redrawn in place; otherwise it prints each new step as
// a plain line, so logs and pipes stay readable.
type Progress struct {
	w        io.Writer
	terminal bool

	mu      sync.Mutex
	msg     string
	frame   int
	drawn   bool
	stop    chan struct{}
	stopped chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// NewProgress starts a Progress on Stderr at step msg.
func (a *Env) NewProgress(msg string) *Progress {
	p := &Progress{w: a.Stderr, terminal: a.Terminal, stop: make(chan struct{}), stopped: make(chan struct{})}
	p.Update("%s", msg)
	if p.terminal {
		go p.spin()
	} else {
		close(p.stopped)
	}
	return p
}

// spin redraws the spinner until Done; it is the only goroutine a
// Progress owns, and Done waits for it.
func (p *Progress) spin() {
	defer close(p.stopped)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.frame++
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// Update sets the current step.
func (p *Progress) Update(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == p.msg {
		return
	}
	p.msg = msg
	if p.terminal {
		p.drawLocked()
		return
	}
	fmt.Fprintln(p.w, msg)
}

func (p *Progress) drawLocked() {
	fmt.Fprintf(p.w, "\r\x1b[K%s %s", spinnerFrames[p.frame%len(spinnerFrames)], p.msg)
	p.drawn = true
}

// Done stops the spinner and leaves final (if any) as the last line.
func (p *Progress) Done(final string) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	if final != "" {
		fmt.Fprintln(p.w, final)
	}
}
