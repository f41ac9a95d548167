package scaling

// OldOpenLockReleased is oldOpenLockReleased (replace_test.go).
var OldOpenLockReleased = oldOpenLockReleased

// StressDuration and StressSeed read DABLOOMS_STRESS and
// DABLOOMS_STRESS_SEED as the stress tests do (stress_test.go).
var (
	StressDuration = stressDuration
	StressSeed     = stressSeed
)

// MetaFlags and SetMetaFlags read and rewrite a quiet file's feature
// flags (counts_test.go).
var (
	MetaFlags    = metaFlags
	SetMetaFlags = setMetaFlags
)

// The helpers of the white-box tests that the external contract tests
// (package scaling_test: persist_test.go) share.
type StoreMode = storeMode

const (
	InFile   = inFile
	InMemory = inMemory
)

var (
	NewStore     = newStore
	MakeKey      = makeKey
	KeyString    = keyString
	Identify     = identify
	RequireFiles = requireFiles
)
