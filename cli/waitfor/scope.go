package waitfor

import (
	"sort"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/query"
)

// The scopes a query sees, built from a model's status. Names are
// Juju's (life, status, workload-status, units, ...); life is "alive"
// unless the status says otherwise.

func life(s string) string {
	if s == "" {
		return string(api.Alive)
	}
	return s
}

func modelScope(fs *api.FullStatus) query.Scope {
	var apps, units []query.Value
	for _, name := range modelcmd.SortedKeys(fs.Applications) {
		as := fs.Applications[name]
		apps = append(apps, appScope(fs, name, as))
		units = append(units, unitScopes(fs, name, as)...)
	}
	var machines []query.Value
	for _, id := range sortedMachines(fs) {
		machines = append(machines, machineScope(id, fs.Machines[id]))
	}
	m := fs.Model
	return query.Scope{
		"name": m.Name, "uuid": m.UUID, "type": m.Type, "cloud": m.Cloud, "region": m.Region,
		"life": life(string(m.Life)), "status": m.Status.Current, "message": m.Status.Message,
		"applications": list(apps), "units": list(units), "machines": list(machines),
	}
}

func appScope(fs *api.FullStatus, name string, as api.ApplicationStatus) query.Scope {
	units := unitScopes(fs, name, as)
	return query.Scope{
		"name": name, "life": life(as.Life), "status": as.ApplicationStat.Current, "message": as.ApplicationStat.Message,
		"charm": as.Charm, "charm-name": as.CharmName, "charm-rev": float64(as.CharmRev), "exposed": as.Exposed,
		"scale": float64(as.Scale), "units": list(units), "machines": machinesOf(fs, units),
	}
}

// unitScopes are an application's units by name; a subordinate
// application's units are found under their principals.
func unitScopes(fs *api.FullStatus, app string, as api.ApplicationStatus) []query.Value {
	units := as.Units
	if len(as.SubordinateTo) > 0 {
		units = map[string]api.UnitStatus{}
		for _, other := range fs.Applications {
			for _, us := range other.Units {
				for sn, ss := range us.Subordinates {
					if a, _, _ := cutUnit(sn); a == app {
						units[sn] = ss
					}
				}
			}
		}
	}
	var out []query.Value
	for _, name := range modelcmd.SortedUnitNames(units) {
		out = append(out, unitScope(fs, app, name, units[name]))
	}
	return out
}

func unitScope(fs *api.FullStatus, app, name string, us api.UnitStatus) query.Scope {
	var machines []query.Value
	if ms, ok := fs.Machines[us.Machine]; ok {
		machines = append(machines, machineScope(us.Machine, ms))
	}
	return query.Scope{
		"name": name, "application": app, "life": life(us.JujuStatus.Life),
		"workload-status": us.WorkloadStatus.Current, "workload-message": us.WorkloadStatus.Message,
		"agent-status": us.JujuStatus.Current, "agent-message": us.JujuStatus.Message,
		"leader": us.Leader, "machine": us.Machine, "public-address": us.PublicAddress,
		"machines": list(machines),
	}
}

func machineScope(id string, ms api.MachineStatus) query.Scope {
	return query.Scope{
		"id": id, "life": life(ms.JujuStatus.Life), "status": ms.JujuStatus.Current, "message": ms.JujuStatus.Message,
		"instance-status": ms.MachineStatus.Current, "hostname": ms.Hostname, "dns-name": ms.DNSName,
	}
}

// machinesOf are the machines the units run on, each once.
func machinesOf(fs *api.FullStatus, units []query.Value) query.Value {
	seen := map[string]bool{}
	var ids []string
	for _, u := range units {
		id, _ := u.(query.Scope)["machine"].(string)
		if _, ok := fs.Machines[id]; ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return modelcmd.MachineLess(ids[i], ids[j]) })
	var out []query.Value
	for _, id := range ids {
		out = append(out, machineScope(id, fs.Machines[id]))
	}
	return list(out)
}

func sortedMachines(fs *api.FullStatus) []string {
	ids := modelcmd.SortedKeys(fs.Machines)
	sort.Slice(ids, func(i, j int) bool { return modelcmd.MachineLess(ids[i], ids[j]) })
	return ids
}

// list is never nil, so len() of an empty list is 0, not an error.
func list(v []query.Value) []query.Value {
	if v == nil {
		return []query.Value{}
	}
	return v
}

// findUnit finds a unit, or a subordinate unit, of the model.
func findUnit(fs *api.FullStatus, name string) (query.Scope, bool) {
	for app, as := range fs.Applications {
		for un, us := range as.Units {
			if un == name {
				return unitScope(fs, app, un, us), true
			}
			for sn, ss := range us.Subordinates {
				if sn == name {
					sub, _, _ := cutUnit(sn)
					return unitScope(fs, sub, sn, ss), true
				}
			}
		}
	}
	return nil, false
}

func cutUnit(name string) (app, num string, ok bool) {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}
