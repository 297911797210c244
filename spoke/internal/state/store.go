package state

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/spoke/internal/state/tables"
	"github.com/hashicorp/go-memdb"
)

// Store is the in-memory model store. Writes come only from the FSM, one at
// a time, through Update; reads take a Snapshot, which is a consistent,
// immutable view. Objects handed out by reads are shared and must not be
// modified.
type Store struct {
	// mu guards the fields below: Restore swaps the database and closes the
	// abandon channel so blocking queries rerun against the new one.
	mu        sync.RWMutex
	db        *memdb.MemDB
	abandonCh chan struct{}
	gen       uint64 // bumped by every Restore
}

// NewStore returns an empty store.
func NewStore() (*Store, error) {
	db, err := memdb.NewMemDB(tables.Schema())
	if err != nil {
		return nil, fmt.Errorf("state schema: %w", err)
	}
	return &Store{db: db, abandonCh: make(chan struct{})}, nil
}

// Snapshot returns a read-only view of the store as of now.
func (s *Store) Snapshot() *Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Snapshot{reader: reader{txn: s.db.Txn(false)}, gen: s.gen}
}

// AbandonCh is closed when a Restore replaces the store's contents.
func (s *Store) AbandonCh() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.abandonCh
}

// BlockingQuery runs fn against a fresh snapshot until the index fn returns
// is greater than minIndex, rerunning it whenever something fn read (through
// snap, or added to ws) changes, or the store is restored. When ctx ends it
// returns fn's latest result with ctx.Err(), so a caller with a wait
// deadline can still answer with the current state.
func (s *Store) BlockingQuery(ctx context.Context, minIndex uint64,
	fn func(ws memdb.WatchSet, snap *Snapshot) (any, uint64, error)) (any, uint64, error) {
	for {
		ws := memdb.NewWatchSet()
		s.mu.RLock()
		snap := &Snapshot{reader: reader{txn: s.db.Txn(false), ws: ws}, gen: s.gen}
		ws.Add(s.abandonCh)
		s.mu.RUnlock()
		resp, idx, err := fn(ws, snap)
		if err != nil || idx > minIndex {
			return resp, idx, err
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return resp, idx, err
		}
	}
}

// Update runs fn in one write transaction at raft index index. If fn fails
// nothing is applied. On success the index table is bumped for every table
// fn touched, in the same transaction, and the events describing the
// changes are returned for publishing after the commit.
func (s *Store) Update(index uint64, fn func(tx *Txn) (any, error)) (any, []stream.Event, error) {
	s.mu.RLock()
	db := s.db
	s.mu.RUnlock()
	tx := newTxn(db, index)
	txn := tx.txn
	v, err := fn(tx)
	if err != nil {
		txn.Abort()
		return nil, nil, err
	}
	events, err := s.finish(txn, index)
	if err != nil {
		return nil, nil, err
	}
	return v, events, nil
}

// UpdateAll runs fns in order in one write transaction at raft index
// index, committing only if every one succeeds: ok is false (and nothing
// is applied) as soon as one fails, and the caller then applies them one by
// one. Sharing one transaction lets a group-committed batch pay for one
// commit, one index update and one change set instead of one per command;
// the end state is the same as applying them in turn, since each fn reads
// the writes of those before it.
func (s *Store) UpdateAll(index uint64, fns []func(tx *Txn) (any, error)) ([]any, []stream.Event, bool) {
	s.mu.RLock()
	db := s.db
	s.mu.RUnlock()
	tx := newTxn(db, index)
	txn := tx.txn
	out := make([]any, len(fns))
	for i, fn := range fns {
		v, err := fn(tx)
		if err != nil {
			txn.Abort()
			return nil, nil, false
		}
		out[i] = v
	}
	events, err := s.finish(txn, index)
	if err != nil {
		return nil, nil, false
	}
	return out, events, true
}

// finish bumps the index table for every table the transaction touched,
// computes its events and commits it.
func (s *Store) finish(txn *memdb.Txn, index uint64) ([]stream.Event, error) {
	changes := txn.Changes()
	var touched []string
	for _, c := range changes {
		if !slices.Contains(touched, c.Table) {
			touched = append(touched, c.Table)
		}
	}
	for _, t := range touched {
		if err := txn.Insert(tables.Index, &tables.IndexEntry{Key: t, Value: index}); err != nil {
			txn.Abort()
			return nil, internalf("index table: %v", err)
		}
	}
	if err := tables.BumpStatusRevisions(txn, changes, index); err != nil {
		txn.Abort()
		return nil, err
	}
	events := eventsFrom(index, changes)
	txn.Commit()
	return events, nil
}

// replace swaps in a fully built database and wakes every blocking query.
func (s *Store) replace(db *memdb.MemDB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.db = db
	s.gen++
	close(s.abandonCh)
	s.abandonCh = make(chan struct{})
}

// Snapshot is a consistent read-only view of the store.
type Snapshot struct {
	reader
	gen uint64
}

// Generation counts the store's restores before this snapshot was taken.
// Two snapshots with equal Generation and LatestIndex hold the same data:
// every write transaction that changes anything bumps the index table.
func (s *Snapshot) Generation() uint64 { return s.gen }

// Txn is a write transaction; it reads its own writes. The raft commands
// are plain functions of a Txn (the commands table names them); its
// methods are what they share: the write primitives (put, del), the
// lookups that turn a missing or dying row into the command's error
// (model, aliveApplication, unit, ...), and the steps several commands
// take (status history, the cascades of destroying and removing).
type Txn struct {
	reader
	index uint64
	// before is the store as the transaction began; with config it lets
	// config writes find the rows they replace without reading through
	// the write transaction (see configRow).
	before reader
	config configWrites
}

// newTxn starts the write transaction of raft index index, tracking its
// changes for events. Only the FSM writes, one transaction at a time, so a
// read transaction opened just before shows the state it starts from.
func newTxn(db *memdb.MemDB, index uint64) *Txn {
	before := db.Txn(false)
	txn := db.Txn(true)
	txn.TrackChanges()
	return &Txn{reader: reader{txn: txn}, index: index, before: reader{txn: before}}
}

// Index is the raft index the transaction is applying.
func (t *Txn) Index() uint64 { return t.index }

// reader holds the read API shared by snapshots and write transactions:
// the queries the spoke's packages make through a Snapshot. When ws is set
// every read adds its watch channel to it.
type reader struct {
	txn *memdb.Txn
	ws  memdb.WatchSet
}

func (r *reader) watch(ch <-chan struct{}) {
	if r.ws != nil && ch != nil {
		r.ws.Add(ch)
	}
}

func internalf(format string, args ...any) *api.Error {
	return api.Errorf(api.CodeInternal, "state: "+format, args...)
}

// first returns the first object of an index lookup, or nil.
func first[T any](r *reader, table, index string, args ...any) (*T, error) {
	ch, obj, err := r.txn.FirstWatch(table, index, args...)
	if err != nil {
		return nil, internalf("%s lookup: %v", table, err)
	}
	r.watch(ch)
	if obj == nil {
		return nil, nil
	}
	return obj.(*T), nil
}

// list returns every object of an index lookup, in index order.
func list[T any](r *reader, table, index string, args ...any) ([]*T, error) {
	it, err := r.txn.Get(table, index, args...)
	if err != nil {
		return nil, internalf("%s list: %v", table, err)
	}
	r.watch(it.WatchCh())
	var out []*T
	for obj := it.Next(); obj != nil; obj = it.Next() {
		out = append(out, obj.(*T))
	}
	return out, nil
}

// Index returns the last raft index that modified table, 0 if none.
func (r *reader) Index(table string) (uint64, error) {
	e, err := first[tables.IndexEntry](r, tables.Index, "id", table)
	if err != nil || e == nil {
		return 0, err
	}
	return e.Value, nil
}

// LatestIndex returns the last raft index that modified any table.
func (r *reader) LatestIndex() (uint64, error) {
	entries, err := list[tables.IndexEntry](r, tables.Index, "id")
	if err != nil {
		return 0, err
	}
	var max uint64
	for _, e := range entries {
		max = maxOf(max, e.Value)
	}
	return max, nil
}

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// put inserts obj, stamping its raft indexes: a new object (CreateIndex 0)
// gets the transaction's index as CreateIndex.
func (t *Txn) put(table string, obj any) error {
	if m := tables.Meta(obj); m != nil {
		if m.CreateIndex == 0 {
			m.CreateIndex = t.index
		}
		m.ModifyIndex = t.index
	}
	if err := t.txn.Insert(table, obj); err != nil {
		return internalf("insert into %s: %v", table, err)
	}
	return nil
}

func (t *Txn) del(table string, obj any) error {
	if err := t.txn.Delete(table, obj); err != nil {
		return internalf("delete from %s: %v", table, err)
	}
	return nil
}
