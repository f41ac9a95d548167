package scaling

// OldOpenLockReleased is oldOpenLockReleased (replace_test.go).
var OldOpenLockReleased = oldOpenLockReleased

// StressDuration and StressSeed read DABLOOMS_STRESS and
// DABLOOMS_STRESS_SEED as the stress tests do (stress_test.go).
var (
	StressDuration = stressDuration
	StressSeed     = stressSeed
)
