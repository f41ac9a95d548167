package scaling

import (
	"runtime"
	"testing"
)

// requireFiles skips a test that needs a file-backed store off Linux, where
// mmapfile refuses files (ErrUnsupported): the memory-mode tests still run
// there. On Linux it does nothing, so no test is ever skipped here.
func requireFiles(tb testing.TB) {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("file-backed store: dablooms files need Linux")
	}
}
