package scaling

// SetSkipReplaceCheck turns the lookups' check of the replaced word off
// (the negative control of the external multi-process replacement test).
func SetSkipReplaceCheck(v bool) { skipReplaceCheck = v }

// OldOpenLockReleased is oldOpenLockReleased (replace_test.go).
var OldOpenLockReleased = oldOpenLockReleased
