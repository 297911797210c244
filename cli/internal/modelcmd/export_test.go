package modelcmd

// What the external tests (package modelcmd_test, which may use
// modelcmdtest) reach inside for.
var (
	RefreshHubSession = refreshHubSession
	TokenExpired      = tokenExpired
)
