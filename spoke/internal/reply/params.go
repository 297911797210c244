package reply

import (
	"net/http"
	"strconv"

	"github.com/droverhq/drover/api"
)

// BadParam is the error of a query parameter that does not parse.
func BadParam(name, value, want string) error {
	return api.Errorf(api.CodeBadRequest, "query parameter %s=%q: %s", name, value, want)
}

// UintParam reads query parameter name as an unsigned integer (0 when
// absent).
func UintParam(r *http.Request, name, want string) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, BadParam(name, v, want)
	}
	return n, nil
}
