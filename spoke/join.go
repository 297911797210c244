package spoke

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/pki"
	"github.com/droverhq/drover/internal/supervise"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/state"
)

// NewJoinToken issues a single-use token for `droverd spoke --join`: it
// records the token's hash in raft before handing the token out, so that
// Admit can consume it on any node.
func (s *Server) NewJoinToken(ctx context.Context, ttl time.Duration) (api.JoinToken, error) {
	switch {
	case ttl == 0:
		ttl = DefaultJoinTokenTTL
	case ttl < time.Second || ttl > MaxJoinTokenTTL:
		return api.JoinToken{}, api.Errorf(api.CodeInvalid, "join token lifetime %s: want between 1s and %s (ask for 0 for %s)",
			ttl, fmtHours(MaxJoinTokenTTL), fmtHours(DefaultJoinTokenTTL))
	}
	now := s.cfg.Now().UTC()
	exp := now.Add(ttl).Truncate(time.Second)
	tok := makeJoinToken(s.secret, s.ca.Fingerprint(), purposeJoin, exp)
	id := tokenID(tok)
	if _, _, err := s.Propose(ctx, state.CreateJoinTokenType, &state.CreateJoinTokenRequest{Hash: tokenHash(tok), Expires: exp, Now: now}); err != nil {
		s.logger.Warn("join token not created", "token-id", id, "err", err)
		return api.JoinToken{}, err
	}
	s.joinAudit.created.Inc()
	s.logger.Info("join token created", "token-id", id, "expires", exp)
	return api.JoinToken{Token: tok, Expires: exp, ID: id}, nil
}

// fmtHours writes a whole number of hours as "24h", not "24h0m0s".
func fmtHours(d time.Duration) string { return fmt.Sprintf("%dh", int(d.Hours())) }

// Admit checks a join token and, once a raft command has consumed it,
// hands the new node its identity and the controller's TLS material and
// cluster secret. A forged or expired token is refused here, and a used
// one this node knows of, without writing to raft; the command refuses
// the rest (unknown, expired, used), on whichever node is asked. Every
// answer is logged and counted with the token's id, never the token.
func (s *Server) Admit(ctx context.Context, req peer.AdmitRequest, from string) (*peer.AdmitResponse, error) {
	tid, now := tokenID(req.Token), s.cfg.Now().UTC()
	id := "node-" + randomHex(4)
	refuse := func(err error) (*peer.AdmitResponse, error) {
		result := admissionFailed
		switch {
		case errors.Is(err, api.ErrUnauthorized):
			result = admissionUnauthorized
		case errors.Is(err, api.ErrForbidden):
			result = admissionForbidden
		}
		s.joinAudit.admissions.WithLabelValues(result).Inc()
		s.logger.Warn("node admission refused", "token-id", tid, "from", from, "result", result, "err", err)
		return nil, err
	}
	if err := verifyJoinToken(s.secret, s.ca.Fingerprint(), purposeJoin, req.Token, now); err != nil {
		return refuse(api.Errorf(api.CodeUnauthorized, "%v", err))
	}
	hash := tokenHash(req.Token)
	known, err := s.Store().Snapshot().JoinTokenByHash(hash)
	if err != nil {
		return refuse(err)
	}
	if known != nil && known.Used {
		return refuse(state.JoinTokenUsable(known, now))
	}
	if _, _, err = s.Propose(ctx, state.UseJoinTokenType, &state.UseJoinTokenRequest{Hash: hash, Node: id, Now: now}); err != nil {
		return refuse(err)
	}
	_, certPEM, keyPEM, err := s.ca.Issue(id, req.Hosts, now)
	if err != nil {
		return refuse(err)
	}
	s.joinAudit.admissions.WithLabelValues(admissionAdmitted).Inc()
	s.logger.Info("node admitted", "token-id", tid, "new-node", id, "from", from)
	return &peer.AdmitResponse{
		NodeID: id, ControllerUUID: s.ident.ControllerUUID, ControllerName: s.ident.ControllerName,
		CACert: string(s.ca.CertPEM), CAKey: string(s.ca.KeyPEM),
		NodeCert: string(certPEM), NodeKey: string(keyPEM), Secret: string(s.secret),
	}, nil
}

// admit is the joining side: learn and pin the CA named by the token, then
// ask to be admitted.
func (s *Server) admit(ctx context.Context, files pki.Files) error {
	p, _, _, err := parseJoinToken(s.cfg.JoinToken)
	if err != nil {
		return err
	}
	// The CA is fetched over unverified TLS and trusted only if its
	// fingerprint is the one the token names.
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // pinned below by fingerprint
	}}
	caPEM, err := getBytes(ctx, insecure, "https://"+s.cfg.Join+peer.PathCA)
	if err != nil {
		return fmt.Errorf("join %s: fetch CA: %w", s.cfg.Join, err)
	}
	pool, err := pki.Pool(caPEM)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	caCert, err := pki.ParseCertPEM(caPEM)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	if pki.Fingerprint(caCert) != p.CA {
		return fmt.Errorf("join %s: the controller's CA does not match the join token", s.cfg.Join)
	}
	pinned := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	body, _ := json.Marshal(peer.AdmitRequest{Token: s.cfg.JoinToken, Hosts: hostsOf(s.cfg.Advertise, s.cfg.Listen, s.cfg.RaftListen)})
	resp, err := pinned.Post("https://"+s.cfg.Join+peer.PathAdmit, "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("join %s: %w", s.cfg.Join, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(b, &e) == nil && e.Message != "" {
			return fmt.Errorf("join %s: %w", s.cfg.Join, &e)
		}
		return fmt.Errorf("join %s: %s", s.cfg.Join, resp.Status)
	}
	var ar peer.AdmitResponse
	if err := json.Unmarshal(b, &ar); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	ca, err := pki.ParseCA([]byte(ar.CACert), []byte(ar.CAKey))
	if err != nil {
		return err
	}
	if err := files.Save(ca, []byte(ar.NodeCert), []byte(ar.NodeKey)); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(files.Dir, "cluster.secret"), []byte(ar.Secret), 0o600); err != nil {
		return err
	}
	id := &identity{NodeID: ar.NodeID, ControllerUUID: ar.ControllerUUID, ControllerName: ar.ControllerName}
	if err := saveIdentity(s.cfg.DataDir, id); err != nil {
		return err
	}
	s.ident = id
	s.ca, s.cert, err = files.Load()
	s.secret = []byte(ar.Secret)
	return err
}

func getBytes(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// AddVoter adds a node to the raft configuration and records its
// addresses; forwarded to the leader when needed.
func (s *Server) AddVoter(ctx context.Context, req peer.AddVoterRequest) error {
	if !s.node.IsLeader() {
		leaderID, _, err := s.node.Leader()
		if err != nil {
			return api.Errorf(api.CodeUnavailable, "no raft leader")
		}
		addr, err := s.APIAddrOf(leaderID)
		if err != nil {
			return api.Errorf(api.CodeUnavailable, "%v", err)
		}
		return s.peers.AddVoter(ctx, addr, req)
	}
	// Record the addresses first so that, once the node votes, every
	// node can already forward to it.
	if _, _, err := s.Propose(ctx, state.UpsertControllerNodeType, &state.UpsertControllerNodeRequest{
		Node: api.ControllerNode{ID: req.NodeID, RaftAddr: req.RaftAddr, APIAddr: req.APIAddr, Voter: true},
	}); err != nil {
		return err
	}
	if err := s.node.AddVoter(ctx, req.NodeID, req.RaftAddr); err != nil {
		return api.Errorf(api.CodeUnavailable, "add voter %s: %v", req.NodeID, err)
	}
	s.logger.Info("added controller node", "new-node", req.NodeID, "raft", req.RaftAddr, "api", req.APIAddr)
	return nil
}

// completeJoin asks the cluster (through the node we joined via) to add us
// as a voter. Retried until it succeeds; a restart repeats it harmlessly.
func (s *Server) completeJoin(ctx context.Context) error {
	if s.ident.Joined || s.cfg.Join == "" {
		return nil
	}
	body, _ := json.Marshal(peer.AddVoterRequest{NodeID: s.ident.NodeID, RaftAddr: s.cfg.RaftListen, APIAddr: s.cfg.Advertise})
	joined := false
	err := supervise.Run(ctx, supervise.Config{Name: "join", Logger: s.logger, Min: joinBackoffMin, Max: joinBackoffMax,
		Message: "joining the controller; will retry", Level: slog.LevelWarn}, func(ctx context.Context) error {
		var out struct{}
		err := s.peers.Call(ctx, s.cfg.Join, peer.PathAddVoter, body, &out)
		joined = err == nil
		return err
	})
	if !joined {
		return err
	}
	s.ident.Joined = true
	return saveIdentity(s.cfg.DataDir, s.ident)
}

// The pause before asking to join again, doubling from min to max.
const (
	joinBackoffMin = 100 * time.Millisecond
	joinBackoffMax = 5 * time.Second
)
