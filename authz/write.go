package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	openfga "github.com/openfga/go-sdk"
	"github.com/openfga/go-sdk/client"
)

// maxTuplesPerWrite is OpenFGA's default cap on writes plus deletes in one
// request (server config MaxTuplesPerWrite).
const maxTuplesPerWrite = 100

// Write deletes then writes tuples. It is idempotent: a write of a tuple
// that already exists and a delete of one that does not are not errors, so
// the hub's outbox worker can retry a batch after any failure.
//
// Up to 100 tuples (writes plus deletes) are applied atomically; a larger
// batch is split into chunks of 100, each atomic, applied in order. Because
// every chunk is idempotent a retry after a partial failure converges.
// Duplicates within writes or within deletes are dropped; a tuple that is
// both written and deleted is rejected with ErrInvalidRequest.
//
// go-sdk v0.6.3 has no field for OpenFGA's on_duplicate / on_missing
// options, so Write posts the request itself; everything else goes through
// the sdk.
func (c *Client) Write(ctx context.Context, writes, deletes []Tuple) error {
	writes, deletes = dedupe(writes), dedupe(deletes)
	inDeletes := make(map[Tuple]bool, len(deletes))
	for _, t := range deletes {
		inDeletes[t] = true
	}
	for _, t := range writes {
		if inDeletes[t] {
			return fmt.Errorf("authz: write: %w: %s is both written and deleted", ErrInvalidRequest, t)
		}
	}
	for len(writes)+len(deletes) > 0 {
		n := min(len(deletes), maxTuplesPerWrite)
		d := deletes[:n]
		deletes = deletes[n:]
		m := min(len(writes), maxTuplesPerWrite-n)
		w := writes[:m]
		writes = writes[m:]
		if err := c.writeChunk(ctx, w, d); err != nil {
			return err
		}
	}
	return nil
}

func dedupe(ts []Tuple) []Tuple {
	seen := make(map[Tuple]bool, len(ts))
	out := make([]Tuple, 0, len(ts))
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

type tupleKey struct {
	User     string `json:"user"`
	Relation string `json:"relation"`
	Object   string `json:"object"`
}

type writeBody struct {
	Writes  *writeSet `json:"writes,omitempty"`
	Deletes *writeSet `json:"deletes,omitempty"`
	ModelID string    `json:"authorization_model_id"`
}

type writeSet struct {
	TupleKeys   []tupleKey `json:"tuple_keys"`
	OnDuplicate string     `json:"on_duplicate,omitempty"`
	OnMissing   string     `json:"on_missing,omitempty"`
}

func keys(ts []Tuple) []tupleKey {
	out := make([]tupleKey, len(ts))
	for i, t := range ts {
		out[i] = tupleKey{User: t.User, Relation: string(t.Relation), Object: t.Object}
	}
	return out
}

func (c *Client) writeChunk(ctx context.Context, writes, deletes []Tuple) error {
	body := writeBody{ModelID: c.modelID}
	if len(writes) > 0 {
		body.Writes = &writeSet{TupleKeys: keys(writes), OnDuplicate: "ignore"}
	}
	if len(deletes) > 0 {
		body.Deletes = &writeSet{TupleKeys: keys(deletes), OnMissing: "ignore"}
	}
	js, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("authz: write: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/stores/"+c.storeID+"/write", bytes.NewReader(js))
	if err != nil {
		return fmt.Errorf("authz: write: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("authz: write: %w", ctx.Err())
		}
		return fmt.Errorf("authz: write: %w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return statusError("write", resp)
}

// statusError turns a non-200 OpenFGA HTTP response into a sentinel error
// carrying the server's code and message.
func statusError(op string, resp *http.Response) error {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(raw, &e) != nil || e.Message == "" {
		e.Message = string(raw)
	}
	sentinel := ErrUnavailable
	switch resp.StatusCode {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		sentinel = ErrInvalidRequest
	case http.StatusNotFound:
		sentinel = ErrNotFound
	}
	return fmt.Errorf("authz: %s: %w: %d %s: %s", op, sentinel, resp.StatusCode, e.Code, e.Message)
}

// ReadFilter selects tuples for Read. OpenFGA requires Object when User is
// set; Object may be a bare type ("model:") to match every object of that
// type. The zero filter matches every tuple in the store.
type ReadFilter struct {
	User     string
	Relation Relation
	Object   string
}

// Read returns one page of tuples matching f, starting at token ("" for the
// first page), and the token of the next page ("" after the last).
func (c *Client) Read(ctx context.Context, f ReadFilter, token string) ([]Tuple, string, error) {
	var body client.ClientReadRequest
	if f.User != "" {
		body.User = &f.User
	}
	if f.Relation != "" {
		rel := string(f.Relation)
		body.Relation = &rel
	}
	if f.Object != "" {
		body.Object = &f.Object
	}
	opts := client.ClientReadOptions{PageSize: openfga.PtrInt32(c.pageLimit)}
	if token != "" {
		opts.ContinuationToken = &token
	}
	resp, err := c.sdk.Read(ctx).Body(body).Options(opts).Execute()
	if err != nil {
		return nil, "", classify(ctx, "read", err)
	}
	out := make([]Tuple, len(resp.Tuples))
	for i, t := range resp.Tuples {
		out[i] = Tuple{User: t.Key.User, Relation: Relation(t.Key.Relation), Object: t.Key.Object}
	}
	return out, resp.ContinuationToken, nil
}

// Has reports whether OpenFGA holds the tuple t itself (not whether t's
// relation follows from other tuples, which is Check's question).
func (c *Client) Has(ctx context.Context, t Tuple) (bool, error) {
	got, _, err := c.Read(ctx, ReadFilter{User: t.User, Relation: t.Relation, Object: t.Object}, "")
	return len(got) > 0, err
}

// ReadAll follows Read's pages to the end. It is meant for the reconciler
// and for tests; request paths should use Check and ListObjects.
func (c *Client) ReadAll(ctx context.Context, f ReadFilter) ([]Tuple, error) {
	var all []Tuple
	token := ""
	for {
		page, next, err := c.Read(ctx, f, token)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		token = next
	}
}
