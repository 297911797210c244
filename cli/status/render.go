package status

import (
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/internal/safetext"
)

// statusOptions shape the tabular status.
type statusOptions struct {
	color     bool
	relations bool // show the Integration section even when empty
}

// filterStatus keeps the applications, units and machines that match any
// pattern (an application, unit or machine name; shell globs allowed), plus
// the machines hosting kept units and the relations among kept
// applications. No patterns keeps everything.
func filterStatus(fs *api.FullStatus, patterns []string) (*api.FullStatus, error) {
	if len(patterns) == 0 {
		return fs, nil
	}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, modelcmd.Usagef("invalid status filter %q: %v", p, err)
		}
	}
	match := func(name string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	out := *fs
	out.Applications = map[string]api.ApplicationStatus{}
	out.Machines = map[string]api.MachineStatus{}
	keptMachines := map[string]bool{}
	for id := range fs.Machines {
		if match(id) {
			keptMachines[id] = true
		}
	}
	for name, app := range fs.Applications {
		appMatch := match(name)
		units := map[string]api.UnitStatus{}
		for un, u := range app.Units {
			subMatch := false
			for sn := range u.Subordinates {
				subMatch = subMatch || match(sn)
			}
			if appMatch || match(un) || subMatch || keptMachines[u.Machine] {
				units[un] = u
			}
		}
		if !appMatch && len(units) == 0 {
			continue
		}
		app.Units = units
		out.Applications[name] = app
		for _, u := range units {
			if u.Machine != "" {
				keptMachines[u.Machine] = true
			}
		}
	}
	for id := range keptMachines {
		if m, ok := fs.Machines[id]; ok {
			out.Machines[id] = m
		}
	}
	out.Relations = nil
	for _, r := range fs.Relations {
		pa, _, _ := strings.Cut(r.Provider, ":")
		ra, _, _ := strings.Cut(r.Requirer, ":")
		if _, ok := out.Applications[pa]; ok {
			out.Relations = append(out.Relations, r)
		} else if _, ok := out.Applications[ra]; ok {
			out.Relations = append(out.Relations, r)
		}
	}
	return &out, nil
}

// writeStatusTabular prints status the way `juju status` does: Model, App,
// Unit, Machine and Integration sections separated by blank lines.
func writeStatusTabular(w io.Writer, fs *api.FullStatus, opt statusOptions) error {
	newTable := func() *modelcmd.Table { return &modelcmd.Table{Color: opt.color} }
	sections := []*modelcmd.Table{modelTable(newTable(), fs)}
	apps := modelcmd.SortedKeys(fs.Applications)
	if len(apps) > 0 {
		sections = append(sections, appTable(newTable(), fs, apps))
	}
	if t := newTable(); unitTable(t, fs, apps) > 0 {
		sections = append(sections, t)
	}
	if len(fs.Machines) > 0 {
		t := newTable()
		MachineRows(t, fs.Machines)
		sections = append(sections, t)
	}
	if len(fs.Relations) > 0 || opt.relations {
		sections = append(sections, relationTable(newTable(), fs.Relations))
	}
	return writeSections(w, sections)
}

// modelTable is the model's line, with a note when it is not plainly
// available.
func modelTable(m *modelcmd.Table, fs *api.FullStatus) *modelcmd.Table {
	region := fs.Model.Cloud
	if fs.Model.Region != "" {
		region += "/" + fs.Model.Region
	}
	hdr := []any{"Model", "Controller", "Cloud/Region", "Version", "Timestamp"}
	row := []any{fs.Model.Name, fs.Model.Controller, region, fs.Model.Version, fs.Controller.Timestamp}
	if fs.Model.Status.Message != "" || (fs.Model.Status.Current != "" && fs.Model.Status.Current != "available") {
		note := fs.Model.Status.Current
		if fs.Model.Status.Message != "" {
			note += ": " + fs.Model.Status.Message
		}
		hdr, row = append(hdr, "Notes"), append(row, modelcmd.Colored(note, modelcmd.StatusColor(fs.Model.Status.Current)))
	}
	m.Row(hdr...)
	m.Row(row...)
	return m
}

// appTable lists the applications apps, in that order.
func appTable(t *modelcmd.Table, fs *api.FullStatus, apps []string) *modelcmd.Table {
	t.Row("App", "Version", "Status", "Scale", "Charm", "Channel", "Rev", "Exposed", "Message")
	for _, name := range apps {
		app := fs.Applications[name]
		scale := ""
		if len(app.SubordinateTo) == 0 {
			scale = strconv.Itoa(len(app.Units))
			if app.Scale != len(app.Units) && app.Scale > 0 {
				scale = fmt.Sprintf("%d/%d", len(app.Units), app.Scale)
			}
		}
		scaleCell := modelcmd.Cell{Text: scale}
		if strings.Contains(scale, "/") {
			scaleCell.Color = modelcmd.ColorYellow
		}
		exposed := modelcmd.Colored("no", "")
		if app.Exposed {
			exposed = modelcmd.Colored("yes", modelcmd.ColorGreen)
		}
		t.Row(name, app.Version, modelcmd.StatusCell(app.ApplicationStat.Current), scaleCell, app.CharmName, "",
			strconv.Itoa(app.CharmRev), exposed, app.ApplicationStat.Message)
	}
	t.Right(3, 6)
	return t
}

// unitTable lists the units of apps, each principal followed by its
// subordinates, and returns how many principals it listed.
func unitTable(units *modelcmd.Table, fs *api.FullStatus, apps []string) int {
	units.Row("Unit", "Workload", "Agent", "Machine", "Public address", "Ports", "Message")
	nunits := 0
	for _, name := range apps {
		app := fs.Applications[name]
		for _, un := range modelcmd.SortedUnitNames(app.Units) {
			u := app.Units[un]
			if app.Units[un].Leader {
				un += "*"
			}
			unitRow(units, un, u)
			nunits++
			for _, sn := range modelcmd.SortedUnitNames(u.Subordinates) {
				s := u.Subordinates[sn]
				label := "  " + sn
				if s.Leader {
					label += "*"
				}
				s.Machine = "" // Juju leaves it to the principal's row
				unitRow(units, label, s)
			}
		}
	}
	return nunits
}

// relationTable lists the integrations by provider, then requirer.
func relationTable(t *modelcmd.Table, relations []api.RelationStatus) *modelcmd.Table {
	t.Row("Integration provider", "Requirer", "Interface", "Type", "Message")
	rels := append([]api.RelationStatus(nil), relations...)
	sort.SliceStable(rels, func(i, j int) bool {
		if rels[i].Provider != rels[j].Provider {
			return rels[i].Provider < rels[j].Provider
		}
		return rels[i].Requirer < rels[j].Requirer
	})
	for _, r := range rels {
		msg := r.Message
		if r.Status != "" && r.Status != "joined" && msg == "" {
			msg = r.Status
		}
		t.Row(r.Provider, r.Requirer, r.Interface, r.Type, modelcmd.Colored(msg, modelcmd.StatusColor(r.Status)))
	}
	return t
}

// writeSections writes the tables one blank line apart.
func writeSections(w io.Writer, sections []*modelcmd.Table) error {
	for i, t := range sections {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := t.Write(w); err != nil {
			return err
		}
	}
	return nil
}

func unitRow(t *modelcmd.Table, label string, u api.UnitStatus) {
	msg := u.WorkloadStatus.Message
	if u.JujuStatus.Current == "executing" && u.JujuStatus.Message != "" {
		op := strings.TrimSuffix(strings.TrimPrefix(u.JujuStatus.Message, "running "), " hook")
		msg = strings.TrimSpace("(" + op + ") " + msg)
	}
	t.Row(label, modelcmd.StatusCell(u.WorkloadStatus.Current), modelcmd.StatusCell(u.JujuStatus.Current), u.Machine, u.PublicAddress,
		strings.Join(u.OpenPorts, ","), msg)
}

// MachineRows fills t with status's Machine section (and 'machines').
func MachineRows(t *modelcmd.Table, machines map[string]api.MachineStatus) {
	t.Row("Machine", "State", "Address", "Inst id", "Base", "AZ", "Message")
	ids := modelcmd.SortedKeys(machines)
	sort.SliceStable(ids, func(i, j int) bool { return modelcmd.MachineLess(ids[i], ids[j]) })
	for _, id := range ids {
		mc := machines[id]
		addr := mc.DNSName
		if addr == "" && len(mc.IPAddresses) > 0 {
			addr = mc.IPAddresses[0]
		}
		base := ""
		if mc.Base != nil {
			base = mc.Base.Name + "@" + mc.Base.Channel
		}
		msg := mc.MachineStatus.Message
		if msg == "" {
			msg = mc.JujuStatus.Message
		}
		t.Row(id, modelcmd.StatusCell(mc.JujuStatus.Current), addr, mc.InstanceID, base, "", msg)
	}
}

// writeStatusOneline prints a line per unit as juju status --format short
// does, each subordinate indented under its principal.
func writeStatusOneline(w io.Writer, fs *api.FullStatus) {
	line := func(indent, name string, u api.UnitStatus) {
		fmt.Fprintf(w, "%s- %s: %s (agent:%s, workload:%s)", indent, name, safetext.Terminal(u.PublicAddress),
			safetext.Terminal(u.JujuStatus.Current), safetext.Terminal(u.WorkloadStatus.Current))
		if len(u.OpenPorts) > 0 {
			fmt.Fprintf(w, " %s", strings.Join(u.OpenPorts, " "))
		}
		fmt.Fprintln(w)
	}
	for _, an := range modelcmd.SortedKeys(fs.Applications) {
		units := fs.Applications[an].Units
		for _, un := range modelcmd.SortedUnitNames(units) {
			u := units[un]
			line("", un, u)
			for _, sn := range modelcmd.SortedUnitNames(u.Subordinates) {
				line("  ", sn, u.Subordinates[sn])
			}
		}
	}
}
