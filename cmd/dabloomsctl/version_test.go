package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/internal/version"
)

func TestVersion(t *testing.T) {
	i := version.Get()
	r := cli(t, "", "version")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("version: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, w := range []string{"module:   github.com/dablooms/dablooms " + i.Module, "go:       " + runtime.Version(),
		"format:   writes " + i.FormatWritten + ", reads " + i.FormatRead, "revision: "} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("version lacks %q:\n%s", w, r.stdout)
		}
	}

	r = cli(t, "", "--version")
	if want := "dabloomsctl " + i.String() + "\n"; r.code != 0 || r.stdout != want {
		t.Errorf("--version: exit %d, stdout %q, want %q", r.code, r.stdout, want)
	}

	r = cli(t, "", "version", "--json")
	var v versionJSON
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("version --json: exit %d, %v:\n%s", r.code, err, r.stdout)
	}
	if v.Schema != "dabloomsctl.version/v1" || v.Go != runtime.Version() || v.FormatWritten != i.FormatWritten || v.Version != i.Module {
		t.Errorf("version --json: %+v", v)
	}

	if r = cli(t, "", "version", "extra"); r.code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", r.code, exitUsage)
	}
}
