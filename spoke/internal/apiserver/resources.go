package apiserver

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// stageUpload takes an upload's body into the blob store's staging area,
// under the node's upload limit (maxCharmUploads, shared by charms and
// resources) and the size limit; what names the content in errors. On
// false the answer is written; otherwise the caller commits or discards
// the staged content and calls release.
func (s *charmEndpoint) stageUpload(w http.ResponseWriter, r *http.Request, what string) (staged *blobs.Staged, release func(), ok bool) {
	// A refusal leaves the body unread, and the connection is closed
	// after it rather than drained of the body for reuse.
	if r.ContentLength > s.cfg.MaxCharmSize {
		w.Header().Set("Connection", "close")
		reply.WriteError(w, r, api.Errorf(api.CodeTooLarge, "%s is over %d bytes", what, s.cfg.MaxCharmSize))
		return nil, nil, false
	}
	select {
	case s.uploads <- struct{}{}:
	default:
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", uploadRetryAfter)
		reply.WriteError(w, r, api.Errorf(api.CodeTooMany, "this controller node is taking %d uploads already: retry in a few seconds", maxCharmUploads))
		return nil, nil, false
	}
	release = func() { <-s.uploads }
	staged, err := s.b.Blobs().Stage(http.MaxBytesReader(w, r.Body, s.cfg.MaxCharmSize))
	if err != nil {
		release()
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) || errors.Is(err, blobs.ErrTooLarge) {
			reply.WriteError(w, r, api.Errorf(api.CodeTooLarge, "%s is over %d bytes", what, s.cfg.MaxCharmSize))
			return nil, nil, false
		}
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "read %s: %v", what, err))
		return nil, nil, false
	}
	return staged, release, true
}

// uploadResourceBlob stores a resource's content on a quorum of nodes and
// answers with its sha256 and size; deploy and attach name it by hash.
// Uploading the same content again is a no-op.
func (s *charmEndpoint) uploadResourceBlob(w http.ResponseWriter, r *http.Request) {
	staged, release, ok := s.stageUpload(w, r, "resource")
	if !ok {
		return
	}
	defer release()
	defer staged.Discard()
	if err := staged.Commit(); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if err := s.b.ReplicateBlob(r.Context(), staged.SHA256); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusCreated, &api.ResourceContent{SHA256: staged.SHA256, Size: staged.Size})
}

// agentDownloadResource serves GET /v1/agent/resources/{sha} to machine
// agents: only content a resource of the agent's model has.
func (s *charmEndpoint) agentDownloadResource(w http.ResponseWriter, r *http.Request) {
	model, snap, apps, ok := s.agentApps(w, r)
	if !ok {
		return
	}
	sha := chi.URLParam(r, "sha")
	var size int64 = -1
	for _, a := range apps {
		res, err := snap.ResourcesByApplication(model, a.Name)
		if err != nil {
			reply.WriteError(w, r, err)
			return
		}
		for _, rs := range res {
			if rs.SHA256 == sha {
				size = rs.Size
			}
		}
	}
	if size < 0 {
		reply.WriteError(w, r, api.Errorf(api.CodeNotFound, "resource content %q is not used in this model", sha))
		return
	}
	s.sendBlob(w, r, sha, func(h http.Header) {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.FormatInt(size, 10))
	})
}

// listResources answers an application's resources, by name (juju
// resources APP).
func (s *applicationEndpoint) listResources(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	if _, err := lookup.Application(snap, modelOf(r), appOf(r)); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	list, err := snap.ResourcesByApplication(modelOf(r), appOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

// attachResources gives an application new resource content (juju
// attach-resource, refresh --resource); a changed resource makes the
// units run upgrade-charm.
func (s *applicationEndpoint) attachResources(w http.ResponseWriter, r *http.Request) {
	var req api.AttachResourcesRequest
	a, ch, _, ok := s.decodeForApp(w, r, &req)
	if !ok {
		return
	}
	ups, err := s.resourceUploads(r.Context(), ch, req.Resources)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if len(ups) == 0 {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "no resources given: name=content-sha256 pairs"))
		return
	}
	s.appCommand(w, r, state.AttachResourcesType, &state.AttachResourcesRequest{ModelUUID: a.ModelUUID, App: a.Name, Resources: ups, Now: s.now()})
}

// resourceUploads checks uploaded content against the charm's resources:
// each name must be a file resource the charm declares, and its content
// stored on the controller. They come back sorted by name.
func (s *applicationEndpoint) resourceUploads(ctx context.Context, ch *api.Charm, given map[string]api.ResourceContent) ([]state.ResourceUpload, error) {
	if len(given) == 0 {
		return nil, nil
	}
	meta, err := charm.ParseMeta([]byte(ch.MetadataYAML))
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "charm %q: %v", ch.Name, err)
	}
	var out []state.ResourceUpload
	for name, c := range given {
		res, ok := meta.Resources[name]
		if !ok {
			return nil, api.Errorf(api.CodeInvalid, "charm %q has no resource %q%s", ch.Name, name, resourceNames(meta))
		}
		if res.Type != charm.ResourceFile {
			return nil, api.Errorf(api.CodeInvalid, "resource %q of charm %q is an %s: only file resources can be uploaded to a machine model", name, ch.Name, res.Type)
		}
		// Content another node took is fetched from it: the upload
		// replicated it to a quorum.
		if !blobs.ValidHash(c.SHA256) || s.b.FetchBlob(ctx, c.SHA256) != nil {
			return nil, api.Errorf(api.CodeInvalid, "resource %q: content %q was not uploaded to this controller", name, c.SHA256)
		}
		out = append(out, state.ResourceUpload{Name: name, Type: string(res.Type), Path: res.Filename, SHA256: c.SHA256, Size: c.Size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func resourceNames(m *charm.Meta) string {
	if len(m.Resources) == 0 {
		return " (it declares none)"
	}
	names := make([]string, 0, len(m.Resources))
	for n := range m.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	return " (it declares " + joinQuoted(names) + ")"
}

func joinQuoted(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(n)
	}
	return out
}

// checkOrigin checks a deploy's charm origin: a base is NAME@CHANNEL
// (ubuntu@24.04), a channel [TRACK/]RISK[/BRANCH] with a known risk.
func checkOrigin(base, channel string) error {
	if base != "" {
		if _, err := charm.ParseBase(base); err != nil {
			return api.Errorf(api.CodeInvalid, "base %q: %v", base, err)
		}
	}
	if channel != "" {
		if _, err := charm.ParseChannel(channel); err != nil {
			return api.Errorf(api.CodeInvalid, "channel %q: %v", channel, err)
		}
	}
	return nil
}

// checkStorage checks a deploy's storage directives against the charm.
func checkStorage(ch *api.Charm, storage map[string]string) error {
	if len(storage) == 0 {
		return nil
	}
	meta, err := charm.ParseMeta([]byte(ch.MetadataYAML))
	if err != nil {
		return api.Errorf(api.CodeInvalid, "charm %q: %v", ch.Name, err)
	}
	for name, d := range storage {
		sd, err := charm.ParseStorageDirective(d)
		if err == nil {
			err = meta.CheckStorage(name, sd)
		}
		if err != nil {
			return api.Errorf(api.CodeInvalid, "storage %q: %v", name, err)
		}
	}
	return nil
}
