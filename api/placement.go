package api

import "regexp"

// A cloud or region name as Juju spells them: "localhost", "us-east-1",
// "europe-west1" (no spaces).
var placementName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckPlacement checks the cloud and region a hub places a controller in:
// a region is required, the cloud may be empty (the local provider's,
// "localhost").
func CheckPlacement(cloud, region string) error {
	if !placementName.MatchString(region) {
		return Errorf(CodeInvalid, "region %q: want up to 64 letters, digits, dots, hyphens and underscores", region)
	}
	if cloud != "" && !placementName.MatchString(cloud) {
		return Errorf(CodeInvalid, "cloud %q: want up to 64 letters, digits, dots, hyphens and underscores", cloud)
	}
	return nil
}

// DefaultCloud is the cloud of a controller registered without one, as
// a controller names its own when no hub placed it.
const DefaultCloud = "localhost"

// Placement is where a hub placed a controller: PUT /v1/controller/placement
// (a controller superuser, the hub included). The controller's status then
// shows it as the models' cloud and region.
type Placement struct {
	Cloud  string `json:"cloud,omitempty"`
	Region string `json:"region"`
}
