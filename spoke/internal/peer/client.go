package peer

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/droverhq/drover/api"
)

// DialFunc dials another node (a fault injector's in tests).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Client calls other nodes with this node's certificate.
type Client struct{ hc *http.Client }

// NewClient returns a client presenting tlsConfig's certificate; dial, if
// not nil, replaces the default dialer.
func NewClient(tlsConfig *tls.Config, dial DialFunc) *Client {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 3 * time.Second}).DialContext
	}
	return &Client{hc: &http.Client{Transport: &http.Transport{
		DialContext:         dial,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}}}
}

// NotDeliveredError marks a call that certainly did not reach the other
// node (it could not be dialled): the caller may retry it anywhere.
type NotDeliveredError struct{ Err error }

func (e *NotDeliveredError) Error() string { return e.Err.Error() }
func (e *NotDeliveredError) Unwrap() error { return e.Err }

// Call POSTs body to another node and decodes a JSON answer. A dial
// failure is a *NotDeliveredError: the request was certainly not
// delivered.
func (c *Client) Call(ctx context.Context, addr, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if isDialError(err) {
			return &NotDeliveredError{err}
		}
		return api.Errorf(api.CodeTimeout, "forwarding to the raft leader failed; outcome unknown: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return api.Errorf(api.CodeTimeout, "reading the leader's answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(b, &e) == nil && e.Code != "" {
			return &e
		}
		return api.Errorf(api.CodeInternal, "peer %s answered %s", addr, resp.Status)
	}
	return json.Unmarshal(b, out)
}

func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var tlsErr *tls.CertificateVerificationError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &tlsErr)
}

// Transport is the round tripper that presents this node's certificate:
// a read a lagging node cannot serve is relayed to the leader through it.
func (c *Client) Transport() http.RoundTripper { return c.hc.Transport }

// HeaderForwardedRead marks a read a follower relayed to the leader: the
// leader answers it or refuses it, never relays it again.
const HeaderForwardedRead = "X-Drover-Forwarded-Read"

// Apply forwards an encoded raft command to the node at addr (the leader).
func (c *Client) Apply(ctx context.Context, addr string, cmd []byte) (ApplyResponse, error) {
	var out ApplyResponse
	err := c.Call(ctx, addr, PathApply, cmd, &out)
	return out, err
}

// ReadIndex asks the node at addr (the leader) for its read index.
func (c *Client) ReadIndex(ctx context.Context, addr string) (ReadIndexResponse, error) {
	var out ReadIndexResponse
	err := c.Call(ctx, addr, PathReadIndex, nil, &out)
	return out, err
}

// Applied asks the node at addr for the index of the last command it has
// applied.
func (c *Client) Applied(ctx context.Context, addr string) (uint64, error) {
	var out AppliedResponse
	err := c.Call(ctx, addr, PathApplied, nil, &out)
	return out.Index, err
}

// AddVoter asks the node at addr to add a node as a voter.
func (c *Client) AddVoter(ctx context.Context, addr string, req AddVoterRequest) error {
	body, _ := json.Marshal(req)
	var out struct{}
	return c.Call(ctx, addr, PathAddVoter, body, &out)
}

// PutBlob pushes a charm blob to the node at addr.
func (c *Client) PutBlob(ctx context.Context, addr, sha string, body io.Reader) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "https://"+addr+pathBlobs+sha, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("push blob: %s", resp.Status)
	}
	return nil
}

// GetBlob opens a charm blob held by the node at addr; the caller closes
// it.
func (c *Client) GetBlob(ctx context.Context, addr, sha string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+pathBlobs+sha, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", addr, resp.Status)
	}
	return resp.Body, nil
}
