package tests

import (
	"encoding/json"
	"testing"
)

// Juju 3.6's JSON shapes as scripts and test libraries read them: the
// field names of Juju's cmd/juju output structs (and of jubilant's
// dataclasses generated from them). decodeJuju refuses any key these
// structs do not name, so a key Drover adds must be listed here, marked
// as Drover's own, and in docs/cli.md's "Juju compatibility" table.

// jujuTask is one unit's entry of run, exec and show-task --format json
// (Juju's formatActionResult).
type jujuTask struct {
	ID      string         `json:"id"`
	Log     []string       `json:"log,omitempty"`
	Message string         `json:"message,omitempty"`
	Results map[string]any `json:"results,omitempty"`
	Status  string         `json:"status"`
	Timing  struct {
		Enqueued  string `json:"enqueued,omitempty"`
		Started   string `json:"started,omitempty"`
		Completed string `json:"completed,omitempty"`
	} `json:"timing"`
	Unit string `json:"unit"`
}

// jujuStatus is status --format json.
type jujuStatus struct {
	Model                jujuModelStatus            `json:"model"`
	Machines             map[string]jujuMachine     `json:"machines"`
	Applications         map[string]jujuApplication `json:"applications"`
	ApplicationEndpoints map[string]json.RawMessage `json:"application-endpoints,omitempty"`
	Offers               map[string]json.RawMessage `json:"offers,omitempty"`
	Storage              json.RawMessage            `json:"storage,omitempty"`
	Controller           *struct {
		Timestamp string `json:"timestamp,omitempty"`
		Name      string `json:"name,omitempty"` // Drover's own
	} `json:"controller,omitempty"`

	// Drover's own: the model's relations as a list (Juju's tabular
	// Integration section) and the controller index the status was read at.
	Relations json.RawMessage `json:"relations,omitempty"`
	Index     uint64          `json:"index,omitempty"`
}

type jujuStatusInfo struct {
	Current string `json:"current,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Since   string `json:"since,omitempty"`
	Version string `json:"version,omitempty"`
	Life    string `json:"life,omitempty"`
}

type jujuModelStatus struct {
	Name             string         `json:"name"`
	UUID             string         `json:"uuid,omitempty"` // Drover's own
	Type             string         `json:"type"`
	Controller       string         `json:"controller"`
	Cloud            string         `json:"cloud"`
	Region           string         `json:"region,omitempty"`
	Version          string         `json:"version"`
	UpgradeAvailable string         `json:"upgrade-available,omitempty"`
	ModelStatus      jujuStatusInfo `json:"model-status,omitempty"`
	SLA              string         `json:"sla,omitempty"`
}

type jujuBase struct {
	Name    string `json:"name"`
	Channel string `json:"channel"`
}

type jujuMachine struct {
	JujuStatus             jujuStatusInfo             `json:"juju-status,omitempty"`
	Hostname               string                     `json:"hostname,omitempty"`
	DNSName                string                     `json:"dns-name,omitempty"`
	IPAddresses            []string                   `json:"ip-addresses,omitempty"`
	InstanceID             string                     `json:"instance-id,omitempty"`
	DisplayName            string                     `json:"display-name,omitempty"`
	MachineStatus          jujuStatusInfo             `json:"machine-status,omitempty"`
	ModificationStatus     jujuStatusInfo             `json:"modification-status,omitempty"`
	Base                   *jujuBase                  `json:"base,omitempty"`
	NetworkInterfaces      map[string]json.RawMessage `json:"network-interfaces,omitempty"`
	Containers             map[string]jujuMachine     `json:"containers,omitempty"`
	Constraints            string                     `json:"constraints,omitempty"`
	Hardware               string                     `json:"hardware,omitempty"`
	ControllerMemberStatus string                     `json:"controller-member-status,omitempty"`
	HAPrimary              bool                       `json:"ha-primary,omitempty"`
	LXDProfiles            map[string]json.RawMessage `json:"lxd-profiles,omitempty"`
}

type jujuApplication struct {
	Charm            string                       `json:"charm"`
	CharmOrigin      string                       `json:"charm-origin"`
	CharmName        string                       `json:"charm-name"`
	CharmRev         *int                         `json:"charm-rev"`
	CharmSHA256      string                       `json:"charm-sha256,omitempty"` // Drover's own
	Exposed          *bool                        `json:"exposed"`
	Base             *jujuBase                    `json:"base,omitempty"`
	CharmChannel     string                       `json:"charm-channel,omitempty"`
	CharmVersion     string                       `json:"charm-version,omitempty"`
	CharmProfile     string                       `json:"charm-profile,omitempty"`
	CanUpgradeTo     string                       `json:"can-upgrade-to,omitempty"`
	Scale            int                          `json:"scale,omitempty"`
	ProviderID       string                       `json:"provider-id,omitempty"`
	Address          string                       `json:"address,omitempty"`
	Life             string                       `json:"life,omitempty"`
	AppStatus        jujuStatusInfo               `json:"application-status,omitempty"`
	Relations        map[string][]jujuAppRelation `json:"relations,omitempty"`
	SubordinateTo    []string                     `json:"subordinate-to,omitempty"`
	Units            map[string]jujuUnitStatus    `json:"units,omitempty"`
	Version          string                       `json:"version,omitempty"`
	EndpointBindings map[string]string            `json:"endpoint-bindings,omitempty"`
}

type jujuAppRelation struct {
	RelatedApplication string `json:"related-application"`
	Interface          string `json:"interface"`
	Scope              string `json:"scope"`
}

type jujuUnitStatus struct {
	WorkloadStatus jujuStatusInfo            `json:"workload-status,omitempty"`
	JujuStatus     jujuStatusInfo            `json:"juju-status,omitempty"`
	Leader         bool                      `json:"leader,omitempty"`
	UpgradingFrom  string                    `json:"upgrading-from,omitempty"`
	Machine        string                    `json:"machine,omitempty"`
	OpenPorts      []string                  `json:"open-ports,omitempty"`
	PublicAddress  string                    `json:"public-address,omitempty"`
	Address        string                    `json:"address,omitempty"`
	ProviderID     string                    `json:"provider-id,omitempty"`
	Subordinates   map[string]jujuUnitStatus `json:"subordinates,omitempty"`
}

// jujuUnitInfo is one unit of show-unit --format json.
type jujuUnitInfo struct {
	WorkloadVersion string             `json:"workload-version,omitempty"`
	Machine         string             `json:"machine,omitempty"`
	OpenedPorts     []string           `json:"opened-ports"`
	PublicAddress   string             `json:"public-address,omitempty"`
	Address         string             `json:"address,omitempty"`
	ProviderID      string             `json:"provider-id,omitempty"`
	Charm           string             `json:"charm"`
	Leader          bool               `json:"leader"`
	Life            string             `json:"life,omitempty"`
	RelationInfo    []jujuRelationData `json:"relation-info,omitempty"`

	// Drover's own: a subordinate's principal unit, and the unit's statuses.
	Principal      string          `json:"principal,omitempty"`
	WorkloadStatus *jujuStatusInfo `json:"workload-status,omitempty"`
	JujuStatus     *jujuStatusInfo `json:"juju-status,omitempty"`
}

type jujuRelationData struct {
	RelationID      int                             `json:"relation-id"`
	Endpoint        string                          `json:"endpoint"`
	CrossModel      bool                            `json:"cross-model,omitempty"`
	RelatedEndpoint string                          `json:"related-endpoint"`
	ApplicationData map[string]any                  `json:"application-data"`
	LocalUnit       *jujuUnitRelationData           `json:"local-unit,omitempty"`
	RelatedUnits    map[string]jujuUnitRelationData `json:"related-units,omitempty"`
}

type jujuUnitRelationData struct {
	InScope bool           `json:"in-scope"`
	Data    map[string]any `json:"data"`
}

// jujuAppConfig is config APP --format json.
type jujuAppConfig struct {
	Application       string                     `json:"application"`
	ApplicationConfig map[string]jujuConfigEntry `json:"application-config"`
	Charm             string                     `json:"charm"`
	Settings          map[string]jujuConfigEntry `json:"settings"`
}

type jujuConfigEntry struct {
	Default     any    `json:"default,omitempty"`
	Description string `json:"description"`
	Source      string `json:"source"`
	Type        string `json:"type"`
	Value       any    `json:"value,omitempty"`
}

// jujuConfigValue is one key of model-config --format json.
type jujuConfigValue struct {
	Value  any    `json:"Value"`
	Source string `json:"Source"`
}

// checkScriptStatus checks the status of TestCLIAsACharmTestDrivesIt's
// model: res related to store, both active on their machines.
func checkScriptStatus(t *testing.T, st *jujuStatus) {
	t.Helper()
	if st.Model.Name != "charmtest" || st.Model.Type != "iaas" || st.Model.Controller != "scripted" || st.Model.Cloud == "" || st.Model.Version == "" {
		t.Errorf("status model: %+v", st.Model)
	}
	for name, app := range st.Applications {
		if app.Charm == "" || app.CharmOrigin != "local" || app.CharmName == "" || app.CharmRev == nil || app.Exposed == nil {
			t.Errorf("application %s lacks Juju's required keys: %+v", name, app)
		}
		if app.Base == nil || app.Base.Name == "" || app.Base.Channel == "" {
			t.Errorf("application %s base: %+v", name, app.Base)
		}
	}
	res, store := st.Applications["res"], st.Applications["store"]
	if want := []jujuAppRelation{{RelatedApplication: "store", Interface: "kv", Scope: "global"}}; len(res.Relations) != 1 || !equalRelations(res.Relations["db"], want) {
		t.Errorf("res relations: %+v", res.Relations)
	}
	if want := []jujuAppRelation{{RelatedApplication: "res", Interface: "kv", Scope: "global"}}; !equalRelations(store.Relations["kv"], want) {
		t.Errorf("store relations: %+v", store.Relations)
	}
	u, ok := res.Units["res/0"]
	if !ok || u.WorkloadStatus.Current != "active" || u.WorkloadStatus.Message != "conf: first" || u.JujuStatus.Current == "" || !u.Leader || u.Machine == "" {
		t.Errorf("res/0: %+v", u)
	}
	if _, ok := st.Machines[u.Machine]; !ok {
		t.Errorf("res/0's machine %q not in machines %v", u.Machine, st.Machines)
	}
	if u := store.Units["store/0"]; u.WorkloadStatus.Current != "active" {
		t.Errorf("store/0: %+v", u)
	}
}

func equalRelations(got, want []jujuAppRelation) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// jujuModelStatusInfo is a model's status in show-model and models.
type jujuModelStatusInfo struct {
	Current        string `json:"current,omitempty"`
	Message        string `json:"message,omitempty"`
	Reason         string `json:"reason,omitempty"`
	Since          string `json:"since,omitempty"`
	Migration      string `json:"migration,omitempty"`
	MigrationStart string `json:"migration-start,omitempty"`
	MigrationEnd   string `json:"migration-end,omitempty"`
}

// jujuModelInfo is one model of show-model --format json (Juju's
// common.ModelInfo, jubilant's ModelInfo).
type jujuModelInfo struct {
	Name              string                     `json:"name"`
	ShortName         string                     `json:"short-name"`
	UUID              string                     `json:"model-uuid"`
	ModelType         string                     `json:"model-type"`
	ControllerUUID    string                     `json:"controller-uuid"`
	ControllerName    string                     `json:"controller-name"`
	IsController      *bool                      `json:"is-controller"`
	Owner             string                     `json:"owner"`
	Cloud             string                     `json:"cloud"`
	Region            string                     `json:"region,omitempty"`
	Credential        json.RawMessage            `json:"credential,omitempty"`
	Type              string                     `json:"type,omitempty"`
	Life              string                     `json:"life"`
	Status            *jujuModelStatusInfo       `json:"status,omitempty"`
	Users             map[string]json.RawMessage `json:"users,omitempty"`
	Machines          map[string]json.RawMessage `json:"machines,omitempty"`
	SecretBackends    map[string]json.RawMessage `json:"secret-backends,omitempty"`
	SLA               string                     `json:"sla,omitempty"`
	SLAOwner          string                     `json:"sla-owner,omitempty"`
	AgentVersion      string                     `json:"agent-version,omitempty"`
	SupportedFeatures []json.RawMessage          `json:"supported-features,omitempty"`

	// Drover's own: the model's config and when it was created, and at a
	// hub its latest migration.
	Config    map[string]any  `json:"config,omitempty"`
	CreatedAt string          `json:"created-at,omitempty"`
	Migration json.RawMessage `json:"migration,omitempty"`
}

// jujuModelSummarySet is models --format json (Juju's ModelSummarySet).
type jujuModelSummarySet struct {
	Models       []jujuModelSummary `json:"models"`
	CurrentModel string             `json:"current-model,omitempty"`
}

type jujuModelSummary struct {
	Name           string               `json:"name"`
	ShortName      string               `json:"short-name"`
	UUID           string               `json:"model-uuid"`
	ModelType      string               `json:"model-type"`
	ControllerUUID string               `json:"controller-uuid"`
	ControllerName string               `json:"controller-name"`
	IsController   *bool                `json:"is-controller"`
	Owner          string               `json:"owner"`
	Cloud          string               `json:"cloud"`
	Region         string               `json:"region,omitempty"`
	Credential     json.RawMessage      `json:"credential,omitempty"`
	Type           string               `json:"type,omitempty"`
	Life           string               `json:"life"`
	Status         *jujuModelStatusInfo `json:"status,omitempty"`
	Access         string               `json:"access"`
	LastConnection string               `json:"last-connection"`
	SLA            string               `json:"sla,omitempty"`
	SLAOwner       string               `json:"sla-owner,omitempty"`
	AgentVersion   string               `json:"agent-version,omitempty"`

	// Drover's own: counts, whether it is the current model, when it was
	// created.
	Machines     int    `json:"machines"`
	Units        int    `json:"units"`
	Applications int    `json:"applications"`
	Current      bool   `json:"current,omitempty"`
	CreatedAt    string `json:"created-at,omitempty"`
}

// jujuVersionDetail is version --format json --all.
type jujuVersionDetail struct {
	Version             string `json:"version"`
	GitCommit           string `json:"git-commit,omitempty"`
	GitTreeState        string `json:"git-tree-state,omitempty"`
	Compiler            string `json:"compiler"`
	OfficialBuildNumber int    `json:"official-build-number,omitempty"`
	Official            bool   `json:"official"`
	Grade               string `json:"grade,omitempty"`
	GoBuildTags         string `json:"go-build-tags,omitempty"`

	GoVersion string `json:"go-version,omitempty"` // Drover's own
}
