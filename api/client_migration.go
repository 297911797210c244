package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// The controller's migration routes (migration.go), for the hub's driver.
// Every step names its migration and carries the driver's idempotency key.

// MigrationStep is one driver step: the migration it belongs to and its
// Idempotency-Key ("<migration-id>/<phase>/<attempt>").
type MigrationStep struct {
	MigrationID string
	Key         string
}

// MaxExportRead bounds an export a client reads: above every controller's
// import limit.
const MaxExportRead = 64 << 20

func migrationPath(model string, segments ...string) string {
	return v1Path(append([]string{"controller", "migrations", model}, segments...)...)
}

func (c *Client) migrationStep(ctx context.Context, model, op string, step MigrationStep, in, out any) error {
	if in == nil {
		in = MigrationStepRequest{MigrationID: step.MigrationID}
	}
	r, err := writeRequest(http.MethodPost, migrationPath(model, op), nil, in)
	if err != nil {
		return err
	}
	r.header = http.Header{HeaderIdempotencyKey: {step.Key}}
	return c.call(ctx, r, out)
}

// MigrationPrecheck asks the controller whether it can take req.Role in
// the migration.
func (c *Client) MigrationPrecheck(ctx context.Context, model string, step MigrationStep, req MigrationPrecheckRequest) (*MigrationPrecheckResult, error) {
	req.MigrationID = step.MigrationID
	var out MigrationPrecheckResult
	if err := c.migrationStep(ctx, model, "precheck", step, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MigrationQuiesce quiesces the source model.
func (c *Client) MigrationQuiesce(ctx context.Context, model string, step MigrationStep) (*Model, error) {
	var out Model
	return &out, c.migrationStep(ctx, model, "quiesce", step, nil, &out)
}

// MigrationRelease ends the source model's quiesce (an abort).
func (c *Client) MigrationRelease(ctx context.Context, model string, step MigrationStep) (*Model, error) {
	var out Model
	return &out, c.migrationStep(ctx, model, "release", step, nil, &out)
}

// MigrationSetPhase moves the source model's minion phase.
func (c *Client) MigrationSetPhase(ctx context.Context, model string, step MigrationStep, phase string, target *TargetController) (*Model, error) {
	var out Model
	req := MigrationPhaseRequest{MigrationID: step.MigrationID, Phase: phase, Target: target}
	return &out, c.migrationStep(ctx, model, "phase", step, req, &out)
}

// MigrationActivate activates the imported model on the target.
func (c *Client) MigrationActivate(ctx context.Context, model string, step MigrationStep) (*Model, error) {
	var out Model
	return &out, c.migrationStep(ctx, model, "activate", step, nil, &out)
}

// MigrationAbortImport removes the target's import of the model, if any.
func (c *Client) MigrationAbortImport(ctx context.Context, model string, step MigrationStep) error {
	return c.migrationStep(ctx, model, "abort-import", step, nil, nil)
}

// MigrationReap drops the source's copy of a migrated model, keeping a
// tombstone that redirects to the target.
func (c *Client) MigrationReap(ctx context.Context, model string, step MigrationStep) error {
	return c.migrationStep(ctx, model, "reap", step, nil, nil)
}

// MigrationModel reads the model as the controller has it, an importing
// one included, consistently.
func (c *Client) MigrationModel(ctx context.Context, model, migrationID string) (*Model, error) {
	var out Model
	err := c.get(ctx, migrationPath(model), url.Values{"migration": {migrationID}}, []ReadOptions{{Consistent: true}}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// MigrationExport reads the source model's export: its bytes, their
// SHA-256 (checked against the controller's header) and the raft index it
// reflects.
func (c *Client) MigrationExport(ctx context.Context, model string, step MigrationStep) ([]byte, string, uint64, error) {
	r := &request{method: http.MethodGet, path: migrationPath(model, "export"),
		query: url.Values{"migration": {step.MigrationID}}, header: http.Header{HeaderIdempotencyKey: {step.Key}}}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, "", 0, err
	}
	defer resp.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxExportRead+1))
	if err != nil {
		return nil, "", 0, unavailablef(err, "reading the export of model %s failed", model)
	}
	if len(data) > MaxExportRead {
		return nil, "", 0, Errorf(CodeTooLarge, "the export of model %s is over %d bytes", model, MaxExportRead)
	}
	sum := sha256.Sum256(data)
	got, want := hex.EncodeToString(sum[:]), resp.Header.Get(HeaderExportSHA256)
	if got != want {
		return nil, "", 0, Errorf(CodeUnavailable, "the export of model %s arrived with SHA-256 %s, not the %s the controller named", model, got, want)
	}
	idx, _ := strconv.ParseUint(resp.Header.Get(HeaderIndex), 10, 64)
	return data, got, idx, nil
}

// MigrationImport imports an export on the target, hidden until activated.
func (c *Client) MigrationImport(ctx context.Context, model string, step MigrationStep, export []byte, sha string) (*Model, error) {
	r := &request{method: http.MethodPost, path: migrationPath(model, "import"),
		query: url.Values{"migration": {step.MigrationID}}, body: export, contentType: "application/octet-stream",
		header: http.Header{HeaderIdempotencyKey: {step.Key}, HeaderExportSHA256: {sha}}}
	var out Model
	if err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MigrationLogs reads the model's debug-log records the answering node
// holds, oldest first.
func (c *Client) MigrationLogs(ctx context.Context, model, migrationID string) ([]LogRecord, error) {
	r := &request{method: http.MethodGet, path: migrationPath(model, "logs"),
		query: url.Values{"migration": {migrationID}}, stream: true}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	var out []LogRecord
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var rec LogRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, Errorf(CodeInternal, "a log record of model %s: %v", model, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, unavailablef(err, "reading the log of model %s failed", model)
	}
	return out, nil
}

// MigrationSendLogs appends records to the target's log of the model;
// records it already holds are skipped, so a step sent again adds nothing.
func (c *Client) MigrationSendLogs(ctx context.Context, model string, step MigrationStep, recs []LogRecord) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, rec := range recs {
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("encode a log record: %w", err)
		}
	}
	r := &request{method: http.MethodPost, path: migrationPath(model, "logs"),
		query: url.Values{"migration": {step.MigrationID}}, body: buf.Bytes(), contentType: "application/x-ndjson",
		header: http.Header{HeaderIdempotencyKey: {step.Key}}}
	return c.call(ctx, r, nil)
}

// MigrationMissingBlobs lists the charm archives and resource content the
// target's copy of the model names and the answering node lacks.
func (c *Client) MigrationMissingBlobs(ctx context.Context, model, migrationID string) ([]string, error) {
	var out MigrationBlobs
	err := c.get(ctx, migrationPath(model, "blobs"), url.Values{"migration": {migrationID}}, []ReadOptions{{Consistent: true}}, &out)
	return out.Missing, err
}

// MigrationBlob reads one blob the source's model names, checking its
// content against its SHA-256.
func (c *Client) MigrationBlob(ctx context.Context, model, migrationID, sha string) ([]byte, error) {
	r := &request{method: http.MethodGet, path: migrationPath(model, "blobs", sha),
		query: url.Values{"migration": {migrationID}}, stream: true}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxExportRead+1))
	if err != nil {
		return nil, unavailablef(err, "reading blob %s of model %s failed", sha, model)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != sha {
		return nil, Errorf(CodeUnavailable, "blob %s of model %s arrived with other content", sha, model)
	}
	return data, nil
}

// MigrationPutBlob stores one blob the target's model names.
func (c *Client) MigrationPutBlob(ctx context.Context, model string, step MigrationStep, sha string, data []byte) error {
	r := &request{method: http.MethodPut, path: migrationPath(model, "blobs", sha),
		query: url.Values{"migration": {step.MigrationID}}, body: data, contentType: "application/octet-stream",
		header: http.Header{HeaderIdempotencyKey: {step.Key}}}
	return c.call(ctx, r, nil)
}
