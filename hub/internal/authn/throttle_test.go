package authn

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
)

func TestClientAddr(t *testing.T) {
	lb := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, c := range []struct {
		name, remote string
		xff          []string
		trusted      []netip.Prefix
		want         string
	}{
		{"direct, no proxies trusted", "198.51.100.7:5000", nil, nil, "198.51.100.7"},
		{"X-Forwarded-For ignored without trusted proxies", "198.51.100.7:5000", []string{"203.0.113.9"}, nil, "198.51.100.7"},
		{"X-Forwarded-For ignored from an untrusted peer", "198.51.100.7:5000", []string{"203.0.113.9"}, lb, "198.51.100.7"},
		{"through the load balancer", "10.1.2.3:5000", []string{"203.0.113.9"}, lb, "203.0.113.9"},
		{"a forged first hop is skipped", "10.1.2.3:5000", []string{"1.2.3.4, 203.0.113.9"}, lb, "203.0.113.9"},
		{"two trusted proxies", "10.1.2.3:5000", []string{"203.0.113.9, 10.9.9.9"}, lb, "203.0.113.9"},
		{"several headers", "10.1.2.3:5000", []string{"1.2.3.4", "203.0.113.9", "10.9.9.9"}, lb, "203.0.113.9"},
		{"only trusted hops", "10.1.2.3:5000", []string{"10.4.4.4"}, lb, "10.4.4.4"},
		{"no header", "10.1.2.3:5000", nil, lb, "10.1.2.3"},
		{"junk stops at the last known hop", "10.1.2.3:5000", []string{"203.0.113.9, junk"}, lb, "10.1.2.3"},
		{"IPv6 peer and client", "[fd00::1]:443", []string{"2001:db8::5"}, lb, "2001:db8::5"},
		{"hop with a port", "10.1.2.3:5000", []string{"203.0.113.9:4711"}, lb, "203.0.113.9"},
		{"IPv4-mapped peer", "[::ffff:10.1.2.3]:5000", []string{"203.0.113.9"}, lb, "203.0.113.9"},
	} {
		if got := clientAddr(c.remote, c.xff, c.trusted); got.String() != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// FuzzClientAddr holds that the client address is always the peer's or one
// the header names, whatever the header holds.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.1.2.3:5000", "1.2.3.4, 203.0.113.9")
	f.Add("[fd00::1]:443", "2001:db8::5,,  ,[::1]:80")
	f.Add("garbage", "10.0.0.1")
	lb := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	f.Fuzz(func(t *testing.T, remote, xff string) {
		got := clientAddr(remote, []string{xff}, lb)
		if !got.IsValid() {
			if parseAddr(remote).IsValid() {
				t.Fatalf("a valid peer %q gave no address", remote)
			}
			return
		}
		if got != parseAddr(remote) && !slices.ContainsFunc(strings.Split(xff, ","), func(h string) bool {
			return parseAddr(strings.TrimSpace(h)) == got
		}) {
			t.Fatalf("%s is neither the peer %q nor in %q", got, remote, xff)
		}
	})
}

func TestThrottleRefills(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	th := newThrottle("test", store.ThrottleRate{Burst: 3, Every: 10 * time.Second}, func() time.Time { return now }, nil)
	a, b := netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("203.0.113.10")
	for i := range 3 {
		if _, _, blocked := th.blocked(t.Context(), a); blocked {
			t.Fatalf("blocked after %d of 3", i)
		}
		th.charge(t.Context(), a)
	}
	retry, audit, blocked := th.blocked(t.Context(), a)
	if !blocked || !audit || retry != 10*time.Second {
		t.Fatalf("after the burst: retry %s, audit %v, blocked %v", retry, audit, blocked)
	}
	if _, audit, _ := th.blocked(t.Context(), a); audit {
		t.Error("a second refusal within the minute is audited again")
	}
	if _, _, blocked := th.blocked(t.Context(), b); blocked {
		t.Error("another address is blocked")
	}
	now = now.Add(4 * time.Second)
	if retry, _, blocked := th.blocked(t.Context(), a); !blocked || retry != 6*time.Second {
		t.Errorf("4 s on: retry %s, blocked %v", retry, blocked)
	}
	now = now.Add(6 * time.Second)
	if _, _, blocked := th.blocked(t.Context(), a); blocked {
		t.Error("still blocked once a token came back")
	}
	th.prune()
	if _, ok := th.buckets[a]; !ok {
		t.Error("pruned a bucket not full")
	}
	now = now.Add(time.Minute)
	th.prune()
	if len(th.buckets) != 0 {
		t.Errorf("%d buckets left after they refilled", len(th.buckets))
	}
	if _, _, blocked := th.blocked(t.Context(), netip.Addr{}); blocked {
		t.Error("an unknown address is blocked")
	}
	// IPv6 addresses count by their /64, which one client picks from.
	for i := range 3 {
		th.charge(t.Context(), netip.MustParseAddr(fmt.Sprintf("2001:db8:1:2::%x", i+1)))
	}
	if _, _, blocked := th.blocked(t.Context(), netip.MustParseAddr("2001:db8:1:2:ffff::9")); !blocked {
		t.Error("another address of the same /64 is not blocked")
	}
	if _, _, blocked := th.blocked(t.Context(), netip.MustParseAddr("2001:db8:1:3::1")); blocked {
		t.Error("another /64 is blocked")
	}
}
