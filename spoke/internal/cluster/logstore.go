package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// logStore is raft's durable log and stable store on bbolt: one bucket of
// log entries keyed by big-endian index, one of stable values. Every
// StoreLogs is one fsynced transaction, so raft acknowledges nothing that
// is not on disk. See docs/decisions/0001-raft-log-store.md for why this is
// ours rather than raft-boltdb or raft-wal.
type logStore struct {
	db *bolt.DB
}

var (
	bucketLogs     = []byte("logs")
	bucketStable   = []byte("stable")
	errKeyNotFound = errors.New("not found")
)

func openLogStore(path string) (*logStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketLogs, bucketStable} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &logStore{db: db}, nil
}

func (s *logStore) Close() error { return s.db.Close() }

func key(i uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], i)
	return b[:]
}

func (s *logStore) FirstIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

func (s *logStore) LastIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

func (s *logStore) GetLog(index uint64, l *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(key(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return decodeLog(v, l)
	})
}

func (s *logStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *logStore) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			if err := b.Put(key(l.Index), encodeLog(l)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *logStore) DeleteRange(min, max uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(key(min)); k != nil; k, _ = c.Next() {
			if binary.BigEndian.Uint64(k) > max {
				break
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *logStore) Set(k, v []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketStable).Put(k, v) })
}

func (s *logStore) Get(k []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketStable).Get(k)
		if v == nil {
			return errKeyNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

func (s *logStore) SetUint64(k []byte, v uint64) error { return s.Set(k, key(v)) }

func (s *logStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if errors.Is(err, errKeyNotFound) {
		return 0, nil // raft treats a missing value as zero
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("stable value %q: want 8 bytes, got %d", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Log encoding: index, term (uint64), type (byte), appended-at (int64 unix
// nanoseconds), then data and extensions each as uint32 length + bytes.
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 8+8+1+8+4+len(l.Data)+4+len(l.Extensions))
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func decodeLog(b []byte, l *raft.Log) error {
	bad := func() error { return fmt.Errorf("corrupt raft log entry (%d bytes)", len(b)) }
	if len(b) < 8+8+1+8+4 {
		return bad()
	}
	l.Index = binary.BigEndian.Uint64(b[0:])
	l.Term = binary.BigEndian.Uint64(b[8:])
	l.Type = raft.LogType(b[16])
	if at := int64(binary.BigEndian.Uint64(b[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	} else {
		l.AppendedAt = time.Time{}
	}
	n := int(binary.BigEndian.Uint32(b[25:]))
	rest := b[29:]
	if n > len(rest) {
		return bad()
	}
	// bbolt's memory is only valid inside the transaction: copy.
	l.Data = append([]byte(nil), rest[:n]...)
	rest = rest[n:]
	if len(rest) < 4 {
		return bad()
	}
	m := int(binary.BigEndian.Uint32(rest))
	rest = rest[4:]
	if m > len(rest) {
		return bad()
	}
	l.Extensions = nil
	if m > 0 {
		l.Extensions = append([]byte(nil), rest[:m]...)
	}
	return nil
}
