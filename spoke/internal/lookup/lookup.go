// Package lookup reads one object from a store snapshot as the API
// answers it: the store's getters answer nil for a missing object, and
// these turn that into the typed not-found errors clients see.
package lookup

import (
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
)

func found[T any](v *T, err error, format string, args ...any) (*T, error) {
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, api.Errorf(api.CodeNotFound, format, args...)
	}
	return v, nil
}

func Model(snap *state.Snapshot, uuid string) (*api.Model, error) {
	v, err := snap.ModelByUUID(uuid)
	return found(v, err, "model %q not found", uuid)
}

func Application(snap *state.Snapshot, model, name string) (*api.Application, error) {
	v, err := snap.ApplicationByName(model, name)
	return found(v, err, "application %q not found", name)
}

func Unit(snap *state.Snapshot, model, name string) (*api.Unit, error) {
	v, err := snap.UnitByName(model, name)
	return found(v, err, "unit %q not found", name)
}

func Machine(snap *state.Snapshot, model, id string) (*api.Machine, error) {
	v, err := snap.MachineByID(model, id)
	return found(v, err, "machine %q not found", id)
}

func Charm(snap *state.Snapshot, sha string) (*api.Charm, error) {
	v, err := snap.CharmBySHA(sha)
	return found(v, err, "charm %q not found; upload it first", sha)
}

func Task(snap *state.Snapshot, model, id string) (*api.Task, error) {
	v, err := snap.TaskByID(model, id)
	return found(v, err, "task %q not found", id)
}

func Controller(snap *state.Snapshot) (*api.Controller, error) {
	v, err := snap.Controller()
	return found(v, err, "controller not initialised yet")
}

// Migrated is the api.Redirect error for a model that migrated away from
// this controller (its migration reached SUCCESS, or it was reaped to a
// tombstone), and nil for any other, known or not.
func Migrated(snap *state.Snapshot, uuid string) error {
	name, target, ok, err := snap.MigratedTo(uuid)
	if err != nil || !ok {
		return err
	}
	return api.Redirect(name, *target)
}
