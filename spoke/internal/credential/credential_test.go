package credential

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestCheckSecret(t *testing.T) {
	sum := sha256.Sum256([]byte("s3cret"))
	hash := "sha256:" + hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		secret, hash string
		want         bool
	}{
		{"s3cret", hash, true},
		{"s3creT", hash, false},
		{"", hash, false},
		{"s3cret", hash[:len(hash)-1], false},
		{"s3cret", hash + "0", false},
		{"s3cret", "sha512:" + hash[len("sha256:"):], false},
		{"s3cret", "", false},
	} {
		if got := SecretMatches(tc.secret, tc.hash); got != tc.want {
			t.Errorf("SecretMatches(%q, %q) = %v", tc.secret, tc.hash, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { SecretMatches("s3cret", hash) }); n != 0 {
		t.Errorf("SecretMatches allocates %v times", n)
	}
}
