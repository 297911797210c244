package store

// ListModelsSQL is VisibleModels' query, for tests that EXPLAIN it.
const ListModelsSQL = listModels
