package agentgw

import (
	"net/http"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/credential"
	"github.com/droverhq/drover/spoke/internal/reply"
)

// maxValidateBody bounds an api.AgentValidateRequest.
const maxValidateBody = 4 << 10

// ServeValidate serves POST api.PathAgentValidate on a migration's
// target: an agent of the model being imported checks, in the
// migration's VALIDATION phase, that the credential it has opens the
// model here (the import carried the credentials' hashes). It answers 204
// and serves nothing else of the model: 401 for a bad credential,
// CodeConflict when the credential's model is not being imported by the
// migration named.
func (g *Gateway) ServeValidate(w http.ResponseWriter, r *http.Request) {
	cred, _, err := g.checkAgent(r)
	if err != nil {
		reply.WriteError(w, r, credential.Refusal(w.Header(), err))
		return
	}
	var req api.AgentValidateRequest
	if err := reply.Decode(w, r, maxValidateBody, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	m, err := g.b.Store().Snapshot().ModelByUUID(cred.ModelUUID)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if !m.Importing() || m.Migration.ID != req.MigrationID {
		reply.WriteError(w, r, api.Errorf(api.CodeConflict,
			"model %s is not being imported to this controller by migration %s", cred.ModelUUID, req.MigrationID))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
