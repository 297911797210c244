package state

import (
	"bytes"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/api"
)

// replayMigrationCommands are appended after the machine tasks: the
// model quiesced for a migration and released (an abort), then a model
// from another controller imported and activated, and one imported and
// aborted.
func replayMigrationCommands() []replayCommand {
	const m = replayModel
	moved, dropped := "3e8d6c4b-2a1f-4e0d-9c8b-7a6f5e4d3c2b", "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"
	return []replayCommand{
		{QuiesceModelType, &QuiesceModelRequest{ModelUUID: m, MigrationID: "c0ffee00-0000-4000-8000-000000000001", Now: replayAt(25 * time.Minute)}},
		{ReleaseModelType, &ReleaseModelRequest{ModelUUID: m, MigrationID: "c0ffee00-0000-4000-8000-000000000001"}},
		{ImportModelType, &ImportModelRequest{MigrationID: "c0ffee00-0000-4000-8000-000000000002", Export: replayExport(moved, "moved"), Now: replayAt(26 * time.Minute)}},
		{ActivateModelType, &ActivateModelRequest{ModelUUID: moved, MigrationID: "c0ffee00-0000-4000-8000-000000000002"}},
		{ImportModelType, &ImportModelRequest{MigrationID: "c0ffee00-0000-4000-8000-000000000003", Export: replayExport(dropped, "dropped"), Now: replayAt(27 * time.Minute)}},
		{AbortImportType, &AbortImportRequest{ModelUUID: dropped, MigrationID: "c0ffee00-0000-4000-8000-000000000003"}},
	}
}

// replayMigrationReapCommands are appended after the migration commands:
// a model imported and activated, then migrated away through its phases
// and reaped to a tombstone; then an import left by one migration and
// replaced by another's (which stays importing).
func replayMigrationReapCommands() []replayCommand {
	gone, left := "7c6b5a49-3827-4165-9a4b-3c2d1e0f9a8b", "1f2e3d4c-5b6a-4798-8a1b-2c3d4e5f6a7b"
	const (
		in    = "c0ffee00-0000-4000-8000-000000000004"
		out   = "c0ffee00-0000-4000-8000-000000000005"
		crash = "c0ffee00-0000-4000-8000-000000000006"
		retry = "c0ffee00-0000-4000-8000-000000000007"
	)
	target := &api.TargetController{ControllerUUID: "0d1e2f3a-4b5c-4d6e-8f7a-8b9c0d1e2f3a", ControllerName: "west",
		Addresses: []string{"10.0.1.5:17070", "10.0.1.6:17070"}, CACert: "-----BEGIN CERTIFICATE-----\nWEST\n-----END CERTIFICATE-----\n"}
	return []replayCommand{
		{ImportModelType, &ImportModelRequest{MigrationID: in, Export: replayExport(gone, "gone"), Now: replayAt(28 * time.Minute)}},
		{ActivateModelType, &ActivateModelRequest{ModelUUID: gone, MigrationID: in}},
		{QuiesceModelType, &QuiesceModelRequest{ModelUUID: gone, MigrationID: out, Now: replayAt(29 * time.Minute)}},
		{SetMigrationPhaseType, &SetMigrationPhaseRequest{ModelUUID: gone, MigrationID: out, Phase: api.MigrationValidation, Target: target}},
		{SetMigrationPhaseType, &SetMigrationPhaseRequest{ModelUUID: gone, MigrationID: out, Phase: api.MigrationSuccess, Target: target}},
		{ReapModelType, &ReapModelRequest{ModelUUID: gone, MigrationID: out, Now: replayAt(30 * time.Minute)}},
		{ImportModelType, &ImportModelRequest{MigrationID: crash, Export: replayExport(left, "left"), Now: replayAt(31 * time.Minute)}},
		{ImportModelType, &ImportModelRequest{MigrationID: retry, Export: replayExport(left, "left"), Now: replayAt(32 * time.Minute)}},
	}
}

// replayMinionCommands are appended after the reap commands: a
// machine agent reports on a migration of the model, which is then
// released.
func replayMinionCommands() []replayCommand {
	const m, id = replayModel, "c0ffee00-0000-4000-8000-000000000004"
	return []replayCommand{
		{QuiesceModelType, &QuiesceModelRequest{ModelUUID: m, MigrationID: id, Now: replayAt(28 * time.Minute)}},
		{ReportMinionType, &ReportMinionRequest{ModelUUID: m, Tag: "machine-" + m + "-0",
			Report: api.MinionReport{MigrationID: id, Phase: api.MigrationQuiesce, Success: true, Time: replayAt(29 * time.Minute)}}},
		{ReleaseModelType, &ReleaseModelRequest{ModelUUID: m, MigrationID: id}},
	}
}

// replayExport is the export of a small model made on another controller:
// one application of one unit.
func replayExport(uuid, name string) []byte {
	f, err := NewFSM(FSMConfig{Logger: slog.New(slog.DiscardHandler), EventBufferSize: 16})
	if err != nil {
		panic(err)
	}
	charm := api.Charm{SHA256: sha("moved-r1"), Name: "moved", Size: 512, MetadataYAML: "name: moved\n"}
	for i, c := range []replayCommand{
		{AddModelType, &AddModelRequest{UUID: uuid, Name: name, Owner: "admin", Now: replayStart}},
		{AddCharmType, &AddCharmRequest{Charm: charm}},
		{AddApplicationType, &AddApplicationRequest{ModelUUID: uuid, Name: "app", CharmSHA256: charm.SHA256, NumUnits: 1, Now: replayStart}},
	} {
		b, err := Encode(c.typ, c.req)
		if err != nil {
			panic(err)
		}
		if res := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: b}).(ApplyResult); res.Err != nil {
			panic(res.Err)
		}
	}
	var buf bytes.Buffer
	if _, err := ExportModel(f.Store().Snapshot(), uuid, "7f3e2d1c-0b9a-4c8d-9e7f-6a5b4c3d2e1f", 3, &buf); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
