package uniter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/agent/internal/hookctx"
)

// ResourceGet is resource-get: the path of the resource's current content
// in the unit's resource directory (Dir/resources/NAME/FILENAME),
// downloaded by hash when the file there is missing or holds other
// content. A new upload replaces the file in place, so the path a charm
// got stays the resource's path.
func (h *hookRemote) ResourceGet(ctx context.Context, name string) (string, error) {
	ms, _ := h.u.cfg.States()
	if ms == nil || ms.Units[h.u.cfg.Unit] == nil {
		return "", errors.New("no state from the controller yet")
	}
	res, ok := ms.Units[h.u.cfg.Unit].Resources[name]
	if !ok {
		return "", fmt.Errorf("%w: resource %q", hookctx.ErrNotFound, name)
	}
	if h.u.cfg.DownloadResource == nil {
		return "", errors.New("this agent cannot download resources")
	}
	file := res.Path
	if file == "" || file != filepath.Base(file) {
		file = name
	}
	dir := filepath.Join(h.u.cfg.Dir, "resources", name)
	dst := filepath.Join(dir, file)
	if sum, err := fileSHA256(dst); err == nil && sum == res.SHA256 {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := dst + ".download"
	if err := h.u.cfg.DownloadResource(ctx, res.SHA256, tmp); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if sum, err := fileSHA256(tmp); err != nil || sum != res.SHA256 {
		os.Remove(tmp)
		return "", fmt.Errorf("downloaded resource %q does not match its sha256 %s (%v)", name, res.SHA256, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	return dst, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
