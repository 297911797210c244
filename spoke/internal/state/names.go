package state

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
)

var appNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]*[a-z][a-z0-9]*)*$`)

// validName checks model and application names as Juju does.
func validName(kind, name string) error {
	if kind == "model" {
		return api.CheckModelName(name)
	}
	if !appNameRE.MatchString(name) {
		return api.Errorf(api.CodeInvalid, "invalid %s name %q", kind, name)
	}
	return nil
}

// unitName is "app/N".
func unitName(app string, n int) string { return app + "/" + strconv.Itoa(n) }

// unitApp returns the application of a unit name, "" if malformed.
func unitApp(unit string) string {
	app, n, ok := strings.Cut(unit, "/")
	if !ok || app == "" {
		return ""
	}
	if _, err := strconv.Atoi(n); err != nil {
		return ""
	}
	return app
}

// unitNumber returns N of "app/N", -1 if malformed.
func unitNumber(unit string) int {
	_, n, _ := strings.Cut(unit, "/")
	i, err := strconv.Atoi(n)
	if err != nil {
		return -1
	}
	return i
}

// unitTag is the credential tag of a unit: "unit-app-N".
func unitTag(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }
