package version

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/header"
)

func TestGet(t *testing.T) {
	i := Get()
	if i.Go != runtime.Version() {
		t.Errorf("Go = %q, want %q", i.Go, runtime.Version())
	}
	want := fmt.Sprintf("%d.%d", header.VersionMajor, header.VersionMinor)
	if i.FormatWritten != want {
		t.Errorf("FormatWritten = %q, want %q", i.FormatWritten, want)
	}
	if !strings.HasSuffix(i.FormatRead, "-"+want) || !strings.HasPrefix(i.FormatRead, fmt.Sprint(header.VersionMajor)+".0") {
		t.Errorf("FormatRead = %q, want %d.0-%s", i.FormatRead, header.VersionMajor, want)
	}
	if i.Module == "" {
		t.Error("Module is empty")
	}
	if i.Release != Release || Release == "" {
		t.Errorf("Release = %q, want %q", i.Release, Release)
	}
}

func TestString(t *testing.T) {
	i := Info{Release: "1.2.3", Module: "v1.2.3", Revision: "abc123", Time: "2026-11-27T09:00:00Z", Modified: true,
		Go: "go1.26.8", FormatWritten: "1.3", FormatRead: "1.0-1.3"}
	got := i.String()
	want := "1.2.3, github.com/dablooms/dablooms v1.2.3, revision abc123 (2026-11-27T09:00:00Z) with uncommitted changes, go1.26.8, format 1.3 (reads 1.0-1.3)"
	if got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	i.Revision, i.Time, i.Modified = "", "", false
	if s := i.String(); !strings.Contains(s, "revision unknown (built without VCS information)") {
		t.Errorf("without a revision: %s", s)
	}
	lines := strings.Join(Info{Release: "1.2.3", Module: "(devel)", Revision: "r", Go: "go1", FormatWritten: "1.3", FormatRead: "1.0-1.3"}.Lines(), "\n")
	for _, w := range []string{"release:  1.2.3\n", "module:   github.com/dablooms/dablooms (devel)", "revision: r", "go:       go1", "format:   writes 1.3, reads 1.0-1.3"} {
		if !strings.Contains(lines, w) {
			t.Errorf("Lines() lacks %q:\n%s", w, lines)
		}
	}
}
