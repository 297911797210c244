package cluster

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer carries raft traffic over mutual TLS: both ends present a
// certificate signed by the controller CA, so only controller nodes can
// take part in the cluster.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	dial      *tls.Config
	node      string
	faults    *Faults
}

func newStreamLayer(ln net.Listener, advertise net.Addr, server, dial *tls.Config, node string, faults *Faults) *streamLayer {
	return &streamLayer{
		Listener:  tls.NewListener(ln, server),
		advertise: advertise,
		dial:      dial,
		node:      node,
		faults:    faults,
	}
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

func (s *streamLayer) Accept() (net.Conn, error) {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if s.faults == nil {
			return c, nil
		}
		// Identify the peer by its certificate so partitions apply to
		// inbound connections as well.
		tc := c.(*tls.Conn)
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.Handshake(); err != nil {
			tc.Close()
			continue
		}
		_ = tc.SetDeadline(time.Time{})
		remote := ""
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
			remote = certs[0].Subject.CommonName
		}
		if s.faults.isRaftBlocked(s.node, remote) {
			tc.Close()
			continue
		}
		return s.faults.wrap(tc, s.node, remote, true), nil
	}
}

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	remote := ""
	if s.faults != nil {
		remote = s.faults.nodeAt(string(addr))
		if s.faults.isRaftBlocked(s.node, remote) {
			return nil, ErrPartitioned
		}
	}
	d := &net.Dialer{Timeout: timeout}
	c, err := tls.DialWithDialer(d, "tcp", string(addr), s.dial)
	if err != nil {
		return nil, err
	}
	return s.faults.wrap(c, s.node, remote, true), nil
}
