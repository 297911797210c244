package spoke

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// identity is what a node keeps about itself in its data dir (node.json).
type identity struct {
	NodeID         string `json:"node-id"`
	ControllerUUID string `json:"controller-uuid"`
	ControllerName string `json:"controller-name"`
	// Joined is set once the cluster has added this node as a voter.
	Joined bool `json:"joined"`
}

// AdminCredential is written at bootstrap to DATA_DIR/controller.json (mode
// 0600): everything a client needs to reach the new controller.
type AdminCredential struct {
	ControllerName string   `json:"controller-name"`
	ControllerUUID string   `json:"controller-uuid"`
	APIAddresses   []string `json:"api-addresses"`
	CACert         string   `json:"ca-cert"`
	User           string   `json:"user"`
	Password       string   `json:"password"`
}

// AdminCredentialFile is the name of the bootstrap credential file.
const AdminCredentialFile = "controller.json"

// ReadAdminCredential reads DATA_DIR/controller.json.
func ReadAdminCredential(dataDir string) (*AdminCredential, error) {
	var c AdminCredential
	if err := readJSON(filepath.Join(dataDir, AdminCredentialFile), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err == nil {
		f.Sync()
		f.Close()
	}
	return os.Rename(tmp, path)
}

func loadIdentity(dir string) (*identity, bool, error) {
	var id identity
	err := readJSON(filepath.Join(dir, "node.json"), &id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &id, true, nil
}

func saveIdentity(dir string, id *identity) error {
	return writeJSON(filepath.Join(dir, "node.json"), id)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// HashSecret hashes a generated, high-entropy secret for storage. Secrets
// here are 32 random bytes, so a fast hash is enough (no dictionary to
// resist); it keeps authentication cheap on every request.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckSecret compares a secret to a stored hash in constant time.
func CheckSecret(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashSecret(secret)), []byte(hash)) == 1
}
