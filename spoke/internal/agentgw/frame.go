package agentgw

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/jsonw"
)

// appendMachineState appends the JSON of ms, byte for byte what
// json.Marshal produces (TestAppendMachineStateMatchesMarshal holds it to
// that, and fails when a field is added to these types), without
// reflection on the hot path: a fan-out encodes one state per connection.
// Free-form values (config, task params, status data, ports) go through
// encoding/json.
func appendMachineState(b []byte, ms *api.MachineState) ([]byte, error) {
	b = append(b, `{"model-uuid":`...)
	b = jsonw.String(b, ms.ModelUUID)
	b = append(b, `,"model-name":`...)
	b = jsonw.String(b, ms.ModelName)
	b = append(b, `,"machine":`...)
	b = jsonw.String(b, ms.Machine)
	b = append(b, `,"life":`...)
	b = jsonw.String(b, string(ms.Life))
	if len(ms.Addresses) > 0 {
		b = append(b, `,"addresses":`...)
		b = appendStrings(b, ms.Addresses)
	}
	b = append(b, `,"controller-addresses":`...)
	b = appendStrings(b, ms.ControllerAddresses)
	b = append(b, `,"update-status-interval":`...)
	b = strconv.AppendInt(b, int64(ms.UpdateStatusInterval), 10)
	b = append(b, `,"automatically-retry-hooks":`...)
	b = strconv.AppendBool(b, ms.AutoRetry)
	b = append(b, `,"units":`...)
	if ms.Units == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, name := range sortedKeys(ms.Units) {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.String(b, name)
			b = append(b, ':')
			var err error
			if b, err = appendUnitState(b, ms.Units[name]); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if len(ms.Tasks) > 0 {
		b = append(b, `,"tasks":`...)
		var err error
		if b, err = appendMarshal(b, ms.Tasks, false, ""); err != nil {
			return nil, err
		}
	}
	if ms.Migration != nil {
		b = append(b, `,"migration":`...)
		var err error
		if b, err = appendMarshal(b, ms.Migration, false, ""); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendUnitState(b []byte, u *api.UnitRemoteState) ([]byte, error) {
	if u == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"unit":`...)
	b = jsonw.String(b, u.Unit)
	b = append(b, `,"application":`...)
	b = jsonw.String(b, u.Application)
	if u.Principal != "" {
		b = append(b, `,"principal":`...)
		b = jsonw.String(b, u.Principal)
	}
	b = append(b, `,"life":`...)
	b = jsonw.String(b, string(u.Life))
	if u.Resolved != "" {
		b = append(b, `,"resolved":`...)
		b = jsonw.String(b, u.Resolved)
	}
	b = append(b, `,"retry-version":`...)
	b = strconv.AppendInt(b, int64(u.RetryVersion), 10)
	b = append(b, `,"charm-sha256":`...)
	b = jsonw.String(b, u.CharmSHA256)
	b = append(b, `,"charm-revision":`...)
	b = strconv.AppendInt(b, int64(u.CharmRevision), 10)
	if u.ForceCharmUpgrade {
		b = append(b, `,"force-charm-upgrade":true`...)
	}
	if u.CharmModifiedVersion != 0 {
		b = append(b, `,"charm-modified-version":`...)
		b = strconv.AppendInt(b, int64(u.CharmModifiedVersion), 10)
	}
	var err error
	if len(u.Resources) > 0 {
		b = append(b, `,"resources":`...)
		if b, err = appendMarshal(b, u.Resources, false, ""); err != nil {
			return nil, err
		}
	}
	if u.Trust {
		b = append(b, `,"trust":true`...)
	}
	b = append(b, `,"config":`...)
	if b, err = appendMarshal(b, u.Config, len(u.Config) == 0 && u.Config != nil, "{}"); err != nil {
		return nil, err
	}
	b = append(b, `,"leader":`...)
	b = strconv.AppendBool(b, u.Leader)
	if !u.LeaseExpiry.IsZero() {
		b = append(b, `,"lease-expiry":`...)
		if b, err = appendMarshal(b, u.LeaseExpiry, false, ""); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"leader-settings-version":`...)
	b = strconv.AppendInt(b, int64(u.LeaderSettingsVersion), 10)
	b = append(b, `,"relations":`...)
	b = appendRelations(b, u.Relations)
	if len(u.Tasks) > 0 {
		b = append(b, `,"tasks":`...)
		if b, err = appendMarshal(b, u.Tasks, false, ""); err != nil {
			return nil, err
		}
	}
	if len(u.OpenPorts) > 0 {
		b = append(b, `,"open-ports":`...)
		if b, err = appendMarshal(b, u.OpenPorts, false, ""); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"workload-status":`...)
	if b, err = appendStatus(b, &u.WorkloadStatus); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendRelations writes a unit's relations by ID, in encoding/json's
// order: integer keys sorted as strings.
func appendRelations(b []byte, rels map[int]*api.RelationRemoteState) []byte {
	if rels == nil {
		return append(b, "null"...)
	}
	ids := make([]string, 0, len(rels))
	for id := range rels {
		ids = append(ids, strconv.Itoa(id))
	}
	slices.Sort(ids)
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, id...)
		b = append(b, `":`...)
		n, _ := strconv.Atoi(id)
		b = appendRelationState(b, rels[n])
	}
	return append(b, '}')
}

// appendStatus writes a status as encoding/json does (api.Status).
func appendStatus(b []byte, st *api.Status) ([]byte, error) {
	b = append(b, `{"status":`...)
	b = jsonw.String(b, st.Status)
	if st.Message != "" {
		b = append(b, `,"message":`...)
		b = jsonw.String(b, st.Message)
	}
	var err error
	if len(st.Data) > 0 {
		b = append(b, `,"data":`...)
		if b, err = appendMarshal(b, st.Data, false, ""); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"since":`...)
	if b, err = appendMarshal(b, st.Since, false, ""); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendRelationState(b []byte, r *api.RelationRemoteState) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(r.ID), 10)
	b = append(b, `,"endpoint":`...)
	b = jsonw.String(b, r.Endpoint)
	b = append(b, `,"interface":`...)
	b = jsonw.String(b, r.Interface)
	b = append(b, `,"role":`...)
	b = jsonw.String(b, r.Role)
	b = append(b, `,"scope":`...)
	b = jsonw.String(b, r.Scope)
	b = append(b, `,"remote-app":`...)
	b = jsonw.String(b, r.RemoteApp)
	b = append(b, `,"life":`...)
	b = jsonw.String(b, string(r.Life))
	b = append(b, `,"joined":`...)
	b = strconv.AppendBool(b, r.Joined)
	b = append(b, `,"members":`...)
	if r.Members == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, name := range sortedKeys(r.Members) {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.String(b, name)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(r.Members[name]), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"app-version":`...)
	b = strconv.AppendInt(b, int64(r.AppVersion), 10)
	return append(b, '}')
}

// appendMarshal appends json.Marshal(v), or short if useShort.
func appendMarshal(b []byte, v any, useShort bool, short string) ([]byte, error) {
	if useShort {
		return append(b, short...), nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, data...), nil
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.String(b, s)
	}
	return append(b, ']')
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
