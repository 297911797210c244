// Package loopback serves what only the machine itself may read on an
// address anyone may reach: the metrics on the hub's and the controllers'
// API addresses (ADR 0023). A request is local when its peer is a loopback
// address and it carries no forwarding header: a proxy on the same machine
// (a load balancer, a TLS terminator) relays others' requests, which are
// not local whoever sent them.
package loopback

import (
	"net"
	"net/http"
)

// Local reports whether r came from this machine itself, not through a
// proxy.
func Local(r *http.Request) bool {
	for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-Ip", "X-Forwarded-Host"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Only serves h to local requests (Local) and answers others 404, as a
// path that is not there.
func Only(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Local(r) {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
