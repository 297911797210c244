//go:build tools

// Package tools pins the etcd server main package so that
// `go build -o bin/etcd go.etcd.io/etcd/server/v3` builds the exact
// version this module requires.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
