package recover

// Source is the application's source of truth for Rebuild: it calls add for
// every key it holds whose id lies in [firstID, lastID], with that id, and
// returns the first error of add or its own. Rebuild calls it once for each
// filter it rebuilds, with that filter's id range.
type Source func(firstID, lastID uint64, add func(key []byte, id uint64) error) error
