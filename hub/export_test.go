package hub

import "context"

// RunIndexer runs the model indexer alone (Run starts it with the HTTPS
// server), for tests that serve the hub with httptest.
func (s *Server) RunIndexer(ctx context.Context) error { return s.indexer.Run(ctx) }
