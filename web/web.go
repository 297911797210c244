package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

// Mode says who serves the dashboard: the hub, or a controller on its own.
type Mode string

const (
	ModeHub        Mode = "hub"
	ModeController Mode = "controller"
)

// Config is what a server tells the dashboard about itself.
type Config struct {
	Mode Mode
	// Name is the hub's or controller's name as the page shows it; it is
	// asked at each request since a controller learns it from raft.
	Name func() string
	// Version is the drover release serving the page.
	Version string
	// NotFound answers what is not the dashboard's: the API's paths and
	// methods other than GET and HEAD.
	NotFound http.Handler
	// FS replaces the embedded build (tests).
	FS fs.FS
}

// SiteConfig is the body of /config.json, which the app reads at start.
type SiteConfig struct {
	Mode    Mode   `json:"mode"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Security headers of every dashboard response. The app loads nothing from
// elsewhere and talks to its own origin alone.
const contentSecurityPolicy = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; base-uri 'none'"

const (
	immutable = "public, max-age=31536000, immutable"
	noCache   = "no-cache"
)

// apiPrefixes are the paths of the servers' own routes: a request there
// that no route took is a 404 of the API, never the app.
var apiPrefixes = []string{"/v1", "/auth", "/healthz", "/readyz", "/metrics", "/.well-known", "/debug"}

// staticExts are the extensions of files a page loads: a missing one is a
// 404, never the app (a deep link's last segment may hold a dot).
var staticExts = map[string]bool{".js": true, ".mjs": true, ".css": true, ".map": true, ".png": true, ".svg": true,
	".ico": true, ".woff": true, ".woff2": true, ".json": true, ".txt": true, ".webmanifest": true, ".wasm": true}

// file is one file of the build, read once at start.
type file struct {
	data, gz []byte // gz is nil when compressing does not pay
	ctype    string
	etag     string
}

// Handler serves the dashboard.
type Handler struct {
	cfg   Config
	files map[string]*file // by path without the leading slash
	index *file
}

// ErrNoIndex means the build has no index.html.
var ErrNoIndex = errors.New("web: the dashboard build has no index.html")

// New reads the build (the embedded dist/ unless cfg.FS) into memory,
// compressing what pays.
func New(cfg Config) (*Handler, error) {
	if cfg.Mode != ModeHub && cfg.Mode != ModeController {
		return nil, fmt.Errorf("web: mode %q is neither %q nor %q", cfg.Mode, ModeHub, ModeController)
	}
	if cfg.NotFound == nil {
		return nil, errors.New("web: NotFound is required")
	}
	if cfg.Name == nil {
		cfg.Name = func() string { return "" }
	}
	root := cfg.FS
	if root == nil {
		sub, err := fs.Sub(dist, "dist")
		if err != nil {
			return nil, err
		}
		root = sub
	}
	h := &Handler{cfg: cfg, files: map[string]*file{}}
	err := fs.WalkDir(root, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() || p == "source.sha256" {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		h.files[p] = newFile(p, b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: reading the build: %w", err)
	}
	if h.index = h.files["index.html"]; h.index == nil {
		return nil, ErrNoIndex
	}
	return h, nil
}

func newFile(p string, b []byte) *file {
	sum := sha256.Sum256(b)
	f := &file{data: b, ctype: mime.TypeByExtension(path.Ext(p)), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	if f.ctype == "" {
		f.ctype = http.DetectContentType(b)
	}
	if len(b) >= 1024 && compressible(f.ctype) {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		if buf.Len() < len(b)*9/10 {
			f.gz = buf.Bytes()
		}
	}
	return f
}

func compressible(ctype string) bool {
	for _, t := range []string{"text/", "application/javascript", "application/json", "image/svg+xml", "application/wasm"} {
		if strings.HasPrefix(ctype, t) {
			return true
		}
	}
	return false
}

// IsAPIPath reports whether p belongs to the servers' own routes, which
// never fall back to the app.
func IsAPIPath(p string) bool {
	for _, pre := range apiPrefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || IsAPIPath(p) || !strings.HasPrefix(p, "/") {
		h.cfg.NotFound.ServeHTTP(w, r)
		return
	}
	setSecurityHeaders(w.Header())
	if p == "/config.json" {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(SiteConfig{Mode: h.cfg.Mode, Name: h.cfg.Name(), Version: h.cfg.Version})
		return
	}
	name := strings.TrimPrefix(path.Clean(p), "/")
	if f, ok := h.files[name]; ok && name != "index.html" {
		cache := noCache
		if strings.HasPrefix(name, "assets/") {
			cache = immutable
		}
		h.serve(w, r, f, cache)
		return
	}
	if strings.HasPrefix(name, "assets/") || staticExts[path.Ext(name)] {
		// A missing asset or file is a 404, not the app: a browser
		// given HTML for a script reports a confusing MIME error.
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	h.serve(w, r, h.index, noCache)
}

func setSecurityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, f *file, cache string) {
	hd := w.Header()
	hd.Set("Cache-Control", cache)
	hd.Set("Content-Type", f.ctype)
	body, etag := f.data, f.etag
	if f.gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body, etag = f.gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether the client takes gzip (a q of 0 refuses it).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
