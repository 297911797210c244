package api

import "regexp"

var modelName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// CheckModelName checks a model name as Juju does: lowercase letters and
// digits, in words joined by single hyphens.
func CheckModelName(name string) error {
	if !modelName.MatchString(name) {
		return Errorf(CodeInvalid, "invalid model name %q", name)
	}
	return nil
}
