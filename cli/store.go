package cli

import "github.com/droverhq/drover/cli/internal/clientstore"

// Store reads and writes the client store (package clientstore); the
// end-to-end tests read what drover saved through it.
type Store = clientstore.Store
