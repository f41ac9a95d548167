package scaling

import (
	"os"
	"path/filepath"
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

// copyFixture copies testdata/name (see testdata/README.md) into a
// temporary directory and returns the copy's path.
func copyFixture(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
