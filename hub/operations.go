package hub

import (
	"fmt"
	"net/http"
	"strings"
)

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
	case method == http.MethodPatch && len(seg) == 1 && seg[0] == "config":
		return "model-config", ""
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "charms":
		return "add-charm", ""
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "applications":
		return "deploy", str("application")
	case method == http.MethodPost && len(seg) == 1 && seg[0] == "relations":
		return "integrate", words(body["endpoints"])
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
	http.MethodPatch + " config": "config",
	http.MethodPost + " units":   "add-unit",
	http.MethodPost + " scale":   "scale",
	http.MethodPost + " expose":  "expose",
	http.MethodPost + " charm":   "refresh",
}
