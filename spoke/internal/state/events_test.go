package state

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

func TestEventsFromApply(t *testing.T) {
	h := newHarness(t)
	h.seed()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := h.fsm.Events().Subscribe(ctx, stream.SubscribeRequest{ModelUUID: testModel, Since: h.index})
	if err != nil {
		t.Fatal(err)
	}
	h.deploy("kv", "kv", 1)
	evs, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range evs {
		if e.Index != h.index || e.ModelUUID != testModel || e.Op != stream.OpUpsert {
			t.Errorf("event %+v", e)
		}
		kinds[e.Kind]++
	}
	for _, k := range []string{KindModel, KindApplication, KindUnit, KindMachine, KindRelation} {
		if kinds[k] != 1 {
			t.Errorf("%d %s events in %v", kinds[k], k, kinds)
		}
	}
	h.must(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"kv/0"}, Force: true})
	evs, err = sub.Next(ctx)
	// The unit goes, the machine it leaves becomes dying, the application
	// loses it.
	if err != nil || len(evs) != 3 || evs[0].Op != stream.OpDelete || evs[0].Key != "kv/0" ||
		evs[1].Kind != KindMachine || evs[1].Op != stream.OpUpsert {
		t.Fatalf("force remove events %+v %v", evs, err)
	}
	// Users are published without their password hash; credentials never.
	all, _ := h.fsm.Events().Subscribe(ctx, stream.SubscribeRequest{Since: h.index})
	h.must(UpsertUserType, &UpsertUserRequest{User: api.User{Name: "u", Access: "login"}, PasswordHash: "h"})
	h.must(SetCredentialType, &SetCredentialRequest{Credential: api.Credential{Tag: "user-u", Hash: "h"}})
	h.must(AddMachineType, &AddMachineRequest{ModelUUID: testModel})
	evs, _ = all.Next(ctx)
	if len(evs) != 3 || evs[0].Kind != KindUser || evs[0].Object.(*api.User).PasswordHash != "" || evs[1].Kind != KindMachine || evs[2].Kind != KindModel {
		t.Fatalf("events %+v", evs)
	}
}

func TestRestoreResetsSubscribers(t *testing.T) {
	h := newHarness(t)
	h.seed()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, _ := h.fsm.Events().Subscribe(ctx, stream.SubscribeRequest{Since: h.index})
	var buf bytes.Buffer
	if err := WriteSnapshot(h.snap(), &buf); err != nil {
		t.Fatal(err)
	}
	if err := h.fsm.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, stream.ErrSubscriptionReset) {
		t.Fatalf("subscriber not reset by restore: %v", err)
	}
}
