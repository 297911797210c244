package spoke

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/tests/testkit"
)

// gatedBody is a request body that sends nothing until gate is closed,
// or fails when ctx ends.
type gatedBody struct {
	ctx  context.Context
	gate <-chan struct{}
	r    io.Reader
}

func (g *gatedBody) Read(p []byte) (int, error) {
	select {
	case <-g.gate:
		return g.r.Read(p)
	case <-g.ctx.Done():
		return 0, g.ctx.Err()
	}
}

// uploadRequest is a charm upload to node 0 with body of the given length.
func (c *testCluster) uploadRequest(ctx context.Context, body io.Reader, length int64) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+c.nodes[0].cfg.Listen+"/v1/charms", body)
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/zip")
	req.SetBasicAuth(c.cred.User, c.cred.Password)
	return req
}

// TestCharmUploadsAreBounded (issue 26, finding 10): a node takes at most
// a few charm uploads at once and answers the others at once with 429 and
// Retry-After rather than holding their archives; an upload declared over
// the size limit is refused with 413 before its body is read; one that
// runs over it while streaming is refused too; and the uploads it took
// complete once their bodies arrive.
func TestCharmUploadsAreBounded(t *testing.T) {
	const limit = 4 // charm uploads one node takes at once
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.MaxCharmSize = 1 << 20 })
	ctx := t.Context()
	hc := c.rawClient()
	hc.Timeout = 20 * time.Second
	kv := archive(t, "testdata/charms/kv")

	// Declared too large: answered from the headers, the body never sent.
	declared, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := hc.Do(c.uploadRequest(declared, &gatedBody{ctx: declared, r: bytes.NewReader(nil)}, 64<<20))
	if err != nil {
		t.Fatalf("an upload declared at 64 MiB over a 1 MiB limit got no answer without its body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("an upload declared at 64 MiB: status %d, want 413", resp.StatusCode)
	}

	// Too large while streaming (no declared length).
	resp, err = hc.Do(c.uploadRequest(ctx, io.MultiReader(bytes.NewReader(kv), bytes.NewReader(make([]byte, 2<<20))), -1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 MiB streamed upload: status %d, want 413", resp.StatusCode)
	}

	// Twice the limit at once, bodies held back.
	const uploads = 2 * limit
	gate := make(chan struct{})
	var mu sync.Mutex
	statuses := map[int]int{}
	retryAfter := true
	var wg sync.WaitGroup
	for range uploads {
		wg.Go(func() {
			resp, err := hc.Do(c.uploadRequest(ctx, &gatedBody{ctx: ctx, gate: gate, r: bytes.NewReader(kv)}, int64(len(kv))))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses[0]++
				return
			}
			resp.Body.Close()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				retryAfter = false
			}
		})
	}
	refused := func() int {
		mu.Lock()
		defer mu.Unlock()
		return statuses[http.StatusTooManyRequests]
	}
	ok := false
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		ok = refused() >= uploads-limit
		return ok, nil
	}, "uploads beyond the limit refused")
	close(gate)
	wg.Wait()
	if !ok || statuses[http.StatusTooManyRequests] != uploads-limit || statuses[http.StatusCreated] != limit || !retryAfter {
		t.Fatalf("%d uploads at once with their bodies held back: statuses %v (Retry-After on each 429: %v), want %d refused with 429 and %d created",
			uploads, statuses, retryAfter, uploads-limit, limit)
	}
	// The slots are free again.
	resp, err = hc.Do(c.uploadRequest(ctx, bytes.NewReader(kv), int64(len(kv))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("an upload after the others: status %d", resp.StatusCode)
	}
}
