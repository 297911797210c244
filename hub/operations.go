package hub

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/droverhq/drover/api"
)

// hubOperations name the hub's own mutating requests for the audit log, by
// route, as drover's commands are named: the one place they are named. The
// entry written before the request is served says it, so one whose end the
// hub could not record (left pending) names its operation as a finished
// one does.
var hubOperations = map[string]string{
	"POST /v1/users/{user}/disable":              "disable-user",
	"POST /v1/users/{user}/enable":               "enable-user",
	"DELETE /v1/users/{user}":                    "remove-user",
	"POST /v1/grants":                            "grant",
	"DELETE /v1/grants":                          "revoke",
	"POST /v1/groups":                            "add-group",
	"PATCH /v1/groups/{group}":                   "rename-group",
	"DELETE /v1/groups/{group}":                  "remove-group",
	"POST /v1/groups/{group}/members":            "add-member",
	"DELETE /v1/groups/{group}/members/{member}": "remove-member",
	"POST /v1/controllers":                       "add-controller",
	"DELETE /v1/controllers/{name}":              "remove-controller",
	"PATCH /v1/controllers/{name}":               "set-controller-deprecated",
	"POST /v1/models":                            "add-model",
	"POST /v1/auth/logout":                       "logout",
	"POST /v1/hub/signing-keys":                  "rotate-signing-key",
	"POST /v1/migrations":                        "migrate",
	"POST /v1/migrations/{id}/abort":             "abort-migration",
	"POST /v1/migrations/{id}/retry-reap":        "retry-reap",
}

// hubOperation names a mutating request on the hub's own routes (not a
// model's), from its route pattern; METHOD PATTERN for one not in
// hubOperations.
func hubOperation(method, pattern string) string {
	if op, ok := hubOperations[method+" "+pattern]; ok {
		return op
	}
	return method + " " + pattern
}

// modelOperation names a mutating model request for the audit log as the
// Juju command that makes it ("deploy", "remove-unit", "run"), with the
// entity it acts on ("kvstore", "kvstore/0", a relation id) when there is
// one. rest is the path after /v1/models/{uuid}; body the request's JSON
// object, or nil. Requests outside the table keep a name built from the
// method and the route ("model POST something/new").
func modelOperation(method, rest string, body map[string]any) (op, target string) {
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	if len(seg) == 1 && seg[0] == "" {
		seg = nil
	}
	str := func(k string) string { s, _ := body[k].(string); return s }
	switch {
	case method == http.MethodDelete && len(seg) == 0:
		return "destroy-model", ""
	case method == http.MethodPatch && len(seg) == 0: // the hub's own (handleSetModelOwner)
		return "set-model-owner", ""
	case method == http.MethodPatch && len(seg) == 1 && seg[0] == "config":
		return "model-config", ""
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "constraints":
		return "set-model-constraints", ""
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "charms":
		return "add-charm", ""
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "resource-blobs":
		return "upload-resource", ""
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "applications":
		return "deploy", str("application")
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "machines":
		return "add-machine", ""
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "relations":
		return "integrate", words(body["endpoints"])
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "actions" && str("action") == api.ExecAction:
		return "exec", words(body["receivers"])
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "actions":
		return "run", strings.TrimSpace(str("action") + " " + words(body["receivers"]))
	case method == http.MethodDelete && len(seg) == 2 && seg[0] == "applications":
		return "remove-application", seg[1]
	case method == http.MethodDelete && len(seg) == 2 && seg[0] == "relations":
		return "remove-relation", seg[1]
	case method == http.MethodDelete && len(seg) == 2 && seg[0] == "machines":
		return "remove-machine", seg[1]
	case method == http.MethodDelete && len(seg) == 3 && seg[0] == "units":
		return "remove-unit", seg[1] + "/" + seg[2]
	case method == http.MethodPost && len(seg) == 3 && seg[0] == "tasks" && seg[2] == "cancel":
		return "cancel-task", seg[1]
	case method == http.MethodPost && len(seg) == 4 && seg[0] == "units" && seg[3] == "resolved":
		return "resolved", seg[1] + "/" + seg[2]
	case len(seg) == 3 && seg[0] == "applications":
		if op, ok := applicationOperations[method+" "+seg[2]]; ok {
			if op == "expose" && body["exposed"] == false {
				op = "unexpose"
			}
			return op, seg[1]
		}
	}
	return "model " + method + " " + routeOf(rest), ""
}

// words joins a JSON list of names with spaces ("" for anything else).
func words(v any) string {
	list, _ := v.([]any)
	names := make([]string, 0, len(list))
	for _, e := range list {
		names = append(names, fmt.Sprint(e))
	}
	return strings.Join(names, " ")
}

// applicationOperations are the requests on /applications/{app}/{what}.
var applicationOperations = map[string]string{
	http.MethodPatch + " config":     "config",
	http.MethodPost + " units":       "add-unit",
	http.MethodPost + " scale":       "scale",
	http.MethodPost + " expose":      "expose",
	http.MethodPost + " charm":       "refresh",
	http.MethodPost + " constraints": "set-constraints",
	http.MethodPost + " trust":       "trust",
	http.MethodPost + " resources":   "attach-resource",
}
