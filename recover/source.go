package recover

// Source is the application's source of truth for Rebuild: it calls add for
// every key it holds whose id lies in [firstID, lastID], with that id, and
// returns the first error of add or its own. Rebuild calls it once for each
// filter it rebuilds, with that filter's id range, and once more, with the
// ids below that range, for a filter that took late Adds (docs/FORMAT.md,
// Late-add index): that call may cover most of the store's history. A
// Rebuild that needs it reads every other filter's counters into memory
// when the filter's index may have lost entries (an OS crash).
type Source func(firstID, lastID uint64, add func(key []byte, id uint64) error) error
