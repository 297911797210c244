package cli

import (
	"strings"
	"testing"
)

// TestKillControllerTakesJujusTimeout: scripts run 'juju kill-controller
// NAME -t 0 -y'; the flag is accepted (and says it is ignored), so the
// command reaches the controller's name.
func TestKillControllerTakesJujusTimeout(t *testing.T) {
	a, _, errb := testApp(t)
	if code := a.Run(t.Context(), []string{"kill-controller", "nowhere", "-t", "0", "-y"}); code != 1 ||
		!strings.Contains(errb.String(), `"nowhere"`) {
		t.Errorf("kill-controller -t 0: exit %d, %s", code, errb)
	}
	a, out, _ := testApp(t)
	if a.Run(t.Context(), []string{"help", "kill-controller"}); !strings.Contains(out.String(), "accepted as Juju's and ignored") {
		t.Errorf("kill-controller's help does not say --timeout is ignored:\n%s", out)
	}
}
