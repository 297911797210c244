// Package web serves the dashboard: the single-page app built from this
// directory into dist/ (`make web`) and embedded in droverd.
//
// Invariants: hashed files under /assets/ are immutable and cached for a
// year; every other path of the app answers index.html, never cached, so a
// deep link opens the app and a new release is picked up on the next load;
// the API's paths (/v1, /auth, /healthz, ...) never fall back to the app and
// go to the caller's own not-found handler; every response of the
// dashboard carries the same strict security headers.
package web
