package main

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	for _, w := range []string{"release:  " + version.Release + "\n", "module:   github.com/dablooms/dablooms " + i.Module, "go:       " + runtime.Version(),
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
	if v.Schema != "dabloomsctl.version/v1" || v.Release != version.Release || v.Go != runtime.Version() || v.FormatWritten != i.FormatWritten || v.Version != i.Module {
		t.Errorf("version --json: %+v", v)
	}

	if r = cli(t, "", "version", "extra"); r.code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", r.code, exitUsage)
	}
}

// A binary says the revision Go recorded in it (a build from a clone,
// -buildvcs=true), and that it has none after -buildvcs=false (as CI
// builds).
func TestVersionRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: no build records a revision")
	}
	for _, flag := range []string{"-buildvcs=true", "-buildvcs=false"} {
		bin := filepath.Join(t.TempDir(), "dabloomsctl")
		cmd := exec.Command("go", "build", flag, "-o", bin, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", flag, err, out)
		}
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		want := "revision: unknown (built without VCS information)\n"
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				want = "revision: " + s.Value
			}
		}
		if flag == "-buildvcs=false" && !strings.Contains(want, "unknown") {
			t.Errorf("go build %s recorded a revision: %s", flag, want)
		}
		out, err := exec.Command(bin, "version").Output()
		if err != nil || !strings.Contains(string(out), want) || !strings.HasPrefix(string(out), "release:  "+version.Release+"\n") {
			t.Errorf("go build %s: dabloomsctl version: %v\n%s\nwant %q", flag, err, out, want)
		}
	}
}

// capi/README.md quotes the version line of this build: its release and
// formats (it said format 1.3 while the build wrote 1.5).
func TestVersionDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "capi", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ") // the line is wrapped
	i := version.Get()
	for _, w := range []string{
		"format " + i.FormatWritten + " (reads " + i.FormatRead + "))",
		"(`" + version.Release + "`)",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("capi/README.md does not quote %q of this build", w)
		}
	}
}
