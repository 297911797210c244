package application

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

func TestMatchRelation(t *testing.T) {
	ep := func(app, name string) api.RelationEndpoint {
		return api.RelationEndpoint{Application: app, Endpoint: api.Endpoint{Name: name}}
	}
	rels := []api.Relation{
		{ID: 1, Key: "kv:kv web:db", Endpoints: []api.RelationEndpoint{ep("kv", "kv"), ep("web", "db")}},
		{ID: 2, Key: "kv:kv web:cache", Endpoints: []api.RelationEndpoint{ep("kv", "kv"), ep("web", "cache")}},
		{ID: 3, Key: "kv:cluster", Endpoints: []api.RelationEndpoint{ep("kv", "cluster")}},
	}
	if id, err := matchRelation(rels, "web:cache", "kv"); err != nil || id != 2 {
		t.Errorf("web:cache kv: %d %v", id, err)
	}
	if _, err := matchRelation(rels, "web", "kv"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("web kv: %v", err)
	}
	if _, err := matchRelation(rels, "web", "nope"); err == nil {
		t.Error("missing relation matched")
	}
}
