// Package version describes this build of dablooms: the module version and
// VCS revision Go recorded in the binary (runtime/debug.ReadBuildInfo), the
// Go version that built it, and the versions of the file format it writes
// and reads (package header's constants). dabloomsctl version, the C
// library's dablooms_version() and pydablooms.__version__ print it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/dablooms/dablooms/header"
)

// ModulePath is this project's Go module.
const ModulePath = "github.com/dablooms/dablooms"

// Release is the release of dablooms this source tree is, or leads to: the
// newest version in CHANGELOG.md. A build says it whatever Go recorded
// (Module is "(devel)" for a build from a clone); Revision says which
// commit it was built from.
const Release = "1.5.0"

// Info is what a build knows about itself.
type Info struct {
	Release  string // Release
	Module   string // the module's version: a tag, a pseudo-version, or "(devel)"
	Revision string // the VCS revision built, "" when Go recorded none
	Time     string // the revision's commit time (RFC 3339), "" when unknown
	Modified bool   // the working tree had uncommitted changes
	Go       string // the Go version that built the binary
	// The file format: the version this build writes, and the versions it
	// reads (its major version, any minor up to the one it writes, and a
	// newer minor unless the file uses features this build does not know).
	FormatWritten string
	FormatRead    string
}

// Get returns the Info of the running binary.
func Get() Info {
	i := Info{
		Release:       Release,
		Module:        "(unknown)",
		Go:            runtime.Version(),
		FormatWritten: fmt.Sprintf("%d.%d", header.VersionMajor, header.VersionMinor),
		FormatRead:    fmt.Sprintf("%d.0-%d.%d", header.VersionMajor, header.VersionMajor, header.VersionMinor),
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	i.Go = bi.GoVersion
	if bi.Main.Path == ModulePath {
		i.Module = bi.Main.Version
	} else {
		for _, d := range bi.Deps { // a program of another module using this one
			if d.Path == ModulePath {
				i.Module = d.Version
				if d.Replace != nil {
					i.Module += " => " + d.Replace.Path + " " + d.Replace.Version
				}
			}
		}
	}
	if i.Module == "" {
		i.Module = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is Info on one line:
//
//	1.5.0, github.com/dablooms/dablooms v1.5.0, revision 0123abcd (2026-11-27T09:11:30Z), go1.26.8, format 1.5 (reads 1.0-1.5)
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s %s, revision %s, %s, format %s (reads %s)",
		i.Release, ModulePath, i.Module, i.revision(), i.Go, i.FormatWritten, i.FormatRead)
	return b.String()
}

func (i Info) revision() string {
	if i.Revision == "" {
		return "unknown (built without VCS information)"
	}
	r := i.Revision
	if i.Time != "" {
		r += " (" + i.Time + ")"
	}
	if i.Modified {
		r += " with uncommitted changes"
	}
	return r
}

// Lines is Info as "name: value" lines, for dabloomsctl version.
func (i Info) Lines() []string {
	return []string{
		"release:  " + i.Release,
		"module:   " + ModulePath + " " + i.Module,
		"revision: " + i.revision(),
		"go:       " + i.Go,
		"format:   writes " + i.FormatWritten + ", reads " + i.FormatRead,
	}
}
