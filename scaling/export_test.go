package scaling

// SetSkipReplaceCheck turns the lookups' check of the replaced word off
// (the negative control of the external multi-process replacement test).
func SetSkipReplaceCheck(v bool) { skipReplaceCheck = v }

// OldOpenLockReleased is oldOpenLockReleased (replace_test.go).
var OldOpenLockReleased = oldOpenLockReleased

// StressDuration and StressSeed read DABLOOMS_STRESS and
// DABLOOMS_STRESS_SEED as the stress tests do (stress_test.go).
var (
	StressDuration = stressDuration
	StressSeed     = stressSeed
)
