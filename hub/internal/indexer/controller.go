// What the index keeps of a controller itself, beside its models: its
// nodes' addresses and its summary (version and nodes).

package indexer

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/store"
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

// followAddresses records the controller's addresses when the frame
// names others.
func (ix *Indexer) followAddresses(ctx context.Context, c *store.Controller, f *api.EventFrame) error {
	if len(f.APIAddresses) == 0 || slices.Equal(f.APIAddresses, c.APIAddresses) {
		return nil
	}
	changed, err := ix.store.Controllers.SetAddresses(ctx, c.UUID, f.APIAddresses)
	if err != nil {
		return err
	}
	if changed {
		ix.cfg.Logger.Info("indexer: controller's addresses changed", "controller", c.Name,
			"was", c.APIAddresses, "now", f.APIAddresses)
	}
	c.APIAddresses = slices.Clone(f.APIAddresses)
	return nil
}
