package proxy

import (
	"github.com/droverhq/drover/hub/internal/reply"

	"net/http"
	"strings"

	"github.com/droverhq/drover/api"
)

// A controller's answer reaches the caller on the hub's origin, where a
// browser holds the dashboard's session cookie. A controller need not be
// the hub operator's (an organization registers its own), so its answer
// must not be able to act there: set a cookie, redirect, or be run as a
// page (text/html would run its script with the caller's session). The hub
// relays only the headers below, a content type among safeAnswerTypes
// (others become application/octet-stream), and always nosniff.

// answerHeaders are the headers of a controller's answer the hub relays.
var answerHeaders = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Content-Disposition": true, "Date": true,
	"Retry-After": true, api.HeaderIndex: true, "X-Content-Type-Options": true,
}

// safeAnswerTypes are the media types a controller answers with (JSON, the
// log stream, charm archives, its CA) and plain text: none is run by a
// browser.
var safeAnswerTypes = map[string]bool{
	"application/json": true, "application/x-ndjson": true, "application/zip": true,
	"application/x-pem-file": true, "application/octet-stream": true, "text/plain": true,
}

// safeContentType reports whether v names one of safeAnswerTypes.
func safeContentType(v string) bool {
	mt, _, _ := strings.Cut(v, ";")
	return safeAnswerTypes[strings.ToLower(strings.TrimSpace(mt))]
}

// copyAnswerHeaders copies to dst what the hub relays of a controller's
// answer headers src.
func copyAnswerHeaders(dst, src http.Header) {
	for k, v := range src {
		if answerHeaders[k] {
			dst[k] = v
		}
	}
	if ct := dst["Content-Type"]; len(ct) > 0 && (len(ct) > 1 || !safeContentType(ct[0])) {
		dst["Content-Type"] = []string{"application/octet-stream"}
	}
	dst["X-Content-Type-Options"] = reply.Nosniff
}

// upgradeHeaders are the headers of a controller's 101 answer to a
// websocket upgrade the hub relays.
var upgradeHeaders = map[string]bool{
	"Upgrade": true, "Connection": true, "Sec-Websocket-Accept": true, "Sec-Websocket-Protocol": true,
	"Sec-Websocket-Extensions": true, "Date": true,
}

// sanitizeUpgradeAnswer keeps of a controller's answer to a websocket
// upgrade only what the hub relays: the handshake's headers when it
// switched protocols, else an ordinary answer's.
func sanitizeUpgradeAnswer(resp *http.Response) {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		for k := range resp.Header {
			if !upgradeHeaders[k] {
				delete(resp.Header, k)
			}
		}
		return
	}
	h := http.Header{}
	copyAnswerHeaders(h, resp.Header)
	resp.Header = h
}
