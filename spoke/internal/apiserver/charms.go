package apiserver

import (
	"archive/zip"
	"io"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke/internal/credential"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// charmCache keeps parsed config and action schemas by charm sha256, so
// validating config or action params does not re-parse YAML each time.
type charmCache struct {
	mu   sync.Mutex
	max  int
	byID map[string]*parsedCharm
}

type parsedCharm struct {
	config  *charm.Config
	actions *charm.Actions
}

func newCharmCache(max int) *charmCache {
	return &charmCache{max: max, byID: map[string]*parsedCharm{}}
}

// defaults is a charm's config defaults, for the agent gateway.
func (c *charmCache) defaults(ch *api.Charm) (map[string]any, error) {
	p, err := c.get(ch)
	if err != nil {
		return nil, err
	}
	return p.config.DefaultSettings(), nil
}

func (c *charmCache) get(ch *api.Charm) (*parsedCharm, error) {
	c.mu.Lock()
	p, ok := c.byID[ch.SHA256]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p = &parsedCharm{config: &charm.Config{Options: map[string]charm.Option{}}}
	var err error
	if ch.ConfigYAML != "" {
		if p.config, err = charm.ParseConfig([]byte(ch.ConfigYAML)); err != nil {
			return nil, err
		}
	}
	if ch.ActionsYAML != "" {
		if p.actions, err = charm.ParseActions([]byte(ch.ActionsYAML)); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	if len(c.byID) >= c.max {
		for k := range c.byID { // evict an arbitrary entry; parsing is cheap
			delete(c.byID, k)
			break
		}
	}
	c.byID[ch.SHA256] = p
	c.mu.Unlock()
	return p, nil
}

func (s *charmEndpoint) listCharms(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	list, err := snap.ListCharms()
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

func (s *charmEndpoint) getCharm(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	c, err := lookup.Charm(snap, chi.URLParam(r, "sha"))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, c)
}

func (s *charmEndpoint) downloadCharm(w http.ResponseWriter, r *http.Request) {
	sha := chi.URLParam(r, "sha")
	snap, _, ok := s.read(w, r)
	if !ok {
		return
	}
	if _, err := lookup.Charm(snap, sha); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.sendCharm(w, r, sha)
}

// agentDownloadCharm serves GET /v1/agent/charms/{sha} to machine agents:
// only a charm an application of the agent's model uses.
func (s *charmEndpoint) agentDownloadCharm(w http.ResponseWriter, r *http.Request) {
	_, _, apps, ok := s.agentApps(w, r)
	if !ok {
		return
	}
	sha := chi.URLParam(r, "sha")
	used := false
	for _, a := range apps {
		used = used || a.CharmSHA256 == sha
	}
	if !used {
		reply.WriteError(w, r, api.Errorf(api.CodeNotFound, "charm %q is not used in this model", sha))
		return
	}
	s.sendCharm(w, r, sha)
}

// agentApps authenticates a machine agent and lists the applications of
// its model, which bound what it may download. On failure it has
// answered, and ok is false.
func (s *charmEndpoint) agentApps(w http.ResponseWriter, r *http.Request) (model string, snap *state.Snapshot, apps []*api.Application, ok bool) {
	model, _, err := s.agents.Authenticate(r)
	if err != nil {
		reply.WriteError(w, r, credential.Refusal(w.Header(), err))
		return "", nil, nil, false
	}
	snap = s.b.Store().Snapshot()
	if apps, err = snap.ListApplications(model); err != nil {
		reply.WriteError(w, r, err)
		return "", nil, nil, false
	}
	return model, snap, apps, true
}

func (s *charmEndpoint) sendCharm(w http.ResponseWriter, r *http.Request, sha string) {
	s.sendBlob(w, r, sha, func(h http.Header) {
		h.Set("Content-Type", "application/zip")
		h.Set("Content-Disposition", `attachment; filename="`+sha+`.charm"`)
	})
}

// sendBlob answers the content stored under sha, fetched from a peer
// first if this node lacks it, with the headers set adds.
func (s *base) sendBlob(w http.ResponseWriter, r *http.Request, sha string, set func(http.Header)) {
	if err := s.b.FetchBlob(r.Context(), sha); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	f, err := s.b.Blobs().Open(sha)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	defer f.Close()
	set(w.Header())
	io.Copy(w, f)
}

// maxCharmUploads bounds the charm uploads a node takes at once; beyond
// it an upload is answered 429 with uploadRetryAfter. Each upload streams
// to a temporary file (blobs.Staged), so one costs a copy buffer and the
// archive's descriptors in memory, not the archive.
const maxCharmUploads = 4

// uploadRetryAfter is the Retry-After, in seconds, of a refused upload.
const uploadRetryAfter = "5"

// uploadCharm validates a charm archive, stores it on a quorum of nodes,
// then commits its metadata. Uploading the same archive again is a no-op.
// An archive declared over the limit is refused before its body is read;
// one that runs over it is refused as soon as it does.
func (s *charmEndpoint) uploadCharm(w http.ResponseWriter, r *http.Request) {
	staged, release, ok := s.stageUpload(w, r, "charm archive")
	if !ok {
		return
	}
	defer release()
	defer staged.Discard()
	if staged.Size == 0 {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "empty body: upload a charm archive (zip)"))
		return
	}
	ch, err := charm.ReadArchive(staged, staged.Size)
	if err != nil {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "invalid charm archive: %v", err))
		return
	}
	raw, err := rawDescriptors(staged, staged.Size)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	sha := staged.SHA256
	if err := staged.Commit(); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if err := s.b.ReplicateBlob(r.Context(), sha); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	rec := api.Charm{
		SHA256: sha, Name: ch.Meta.Name, Size: staged.Size, Subordinate: ch.Meta.Subordinate,
		MetadataYAML: raw[charm.MetadataFile], ConfigYAML: raw[charm.ConfigFile], ActionsYAML: raw[charm.ActionsFile],
	}
	for _, ep := range ch.Meta.Endpoints() {
		rec.Endpoints = append(rec.Endpoints, api.Endpoint{
			Name: ep.Name, Role: string(ep.Role), Interface: ep.Interface, Scope: string(ep.Scope),
			Limit: ep.Limit, Optional: ep.Optional,
		})
	}
	var out api.Charm
	idx, err := s.propose(r, state.AddCharmType, &state.AddCharmRequest{Charm: rec}, &out)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusCreated, idx, &out)
}

// rawDescriptors returns the descriptor files' text as stored in the
// archive; agents and clients see exactly what the charm shipped.
func rawDescriptors(archive io.ReaderAt, size int64) (map[string]string, error) {
	zr, err := zip.NewReader(archive, size)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "invalid charm archive: %v", err)
	}
	out := map[string]string{}
	for _, f := range zr.File {
		switch f.Name {
		case charm.MetadataFile, charm.ConfigFile, charm.ActionsFile:
			rc, err := f.Open()
			if err != nil {
				return nil, api.Errorf(api.CodeInvalid, "invalid charm archive: %s: %v", f.Name, err)
			}
			b, err := io.ReadAll(io.LimitReader(rc, 8<<20))
			rc.Close()
			if err != nil {
				return nil, api.Errorf(api.CodeInvalid, "invalid charm archive: %s: %v", f.Name, err)
			}
			out[f.Name] = string(b)
		}
	}
	if out[charm.MetadataFile] == "" {
		return nil, api.Errorf(api.CodeInvalid, "invalid charm archive: no metadata.yaml at its root (pack source charms with `drover deploy DIR` or charmcraft)")
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
