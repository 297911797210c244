package indexer

import (
	"encoding/json"

	"github.com/droverhq/drover/api"
)

// The keys of a controller's health map that hold its summary
// (api.ControllerSummary), which the dashboard reads.
const (
	healthVersion = "version"
	healthNodes   = "nodes"
)

// health is h (a new map if nil) with the controller's summary, if the
// follower holds one: SetHealth replaces the whole map.
func (fs *following) health(h map[string]any) map[string]any {
	if h == nil {
		h = map[string]any{}
	}
	if fs.summary != nil {
		nodes := fs.summary.Nodes
		if nodes == nil {
			nodes = []api.NodeInfo{} // the dashboard reads an array
		}
		h[healthVersion], h[healthNodes] = fs.summary.Version, nodes
	}
	return h
}

// summaryOf reads back the summary a health map records (nil if it
// records none, or not in the form health writes).
func summaryOf(h map[string]any) *api.ControllerSummary {
	v, ok := h[healthVersion].(string)
	if !ok {
		return nil
	}
	sum := &api.ControllerSummary{Version: v}
	if raw, ok := h[healthNodes]; ok && raw != nil {
		b, err := json.Marshal(raw)
		if err != nil || json.Unmarshal(b, &sum.Nodes) != nil {
			return nil
		}
	}
	return sum
}
