package api

import (
	"bytes"
	"encoding/json"
)

// A hub answers model listings from its index: {"models": [...]} whose
// entries carry the status as a plain string. The client reads both that
// and a controller's bare array, so callers see one shape.

// modelList decodes a controller's or a hub's model list.
type modelList []Model

func (l *modelList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var wrapped struct {
			Models []Model `json:"models"`
		}
		if err := json.Unmarshal(b, &wrapped); err != nil {
			return err
		}
		*l = wrapped.Models
		return nil
	}
	var ms []Model
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*l = ms
	return nil
}

// UnmarshalJSON accepts a Status object, or a bare status string (a hub's
// index summary).
func (s *Status) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*s = Status{}
		return json.Unmarshal(b, &s.Status)
	}
	type plain Status
	return json.Unmarshal(b, (*plain)(s))
}
