package cluster

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestLogStoreRoundTripAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 123)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: []byte{byte(i)}, Extensions: []byte("x"), AppendedAt: at})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 4 || last != 10 {
		t.Fatalf("first/last = %d/%d, want 4/10", first, last)
	}
	var l raft.Log
	if err := s.GetLog(5, &l); err != nil {
		t.Fatal(err)
	}
	if l.Index != 5 || l.Term != 2 || !bytes.Equal(l.Data, []byte{5}) || string(l.Extensions) != "x" || !l.AppendedAt.Equal(at) {
		t.Fatalf("log 5 = %+v", l)
	}
	if err := s.GetLog(2, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted log: %v", err)
	}
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 7 {
		t.Fatalf("term = %d", v)
	}
	if v, err := s.GetUint64([]byte("missing")); v != 0 || err != nil {
		t.Fatalf("missing key = %d, %v", v, err)
	}
	if err := decodeLog([]byte{1, 2, 3}, &l); err == nil {
		t.Fatal("a truncated entry decoded")
	}
}

func TestBatchEncoding(t *testing.T) {
	batch := []*proposal{{cmd: []byte("a")}, {cmd: nil}, {cmd: bytes.Repeat([]byte("x"), 300)}}
	got, err := decodeBatch(encodeBatch(batch))
	if err != nil || len(got) != 3 || string(got[0]) != "a" || len(got[1]) != 0 || len(got[2]) != 300 {
		t.Fatalf("decode = %q, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {BatchMarker}, {BatchMarker, 2, 1, 'a'}, {BatchMarker, 1, 5, 'a'}, {BatchMarker, 1, 1, 'a', 'b'}} {
		if _, err := decodeBatch(bad); err == nil {
			t.Errorf("decodeBatch(%v) succeeded", bad)
		}
	}
}
