package main

import (
	"fmt"

	"github.com/dablooms/dablooms/internal/version"
	"github.com/spf13/cobra"
)

type versionJSON struct {
	Schema        string `json:"schema"`
	Release       string `json:"release"`
	Module        string `json:"module"`
	Version       string `json:"version"`
	Revision      string `json:"revision"` // "" when the build recorded none
	RevisionTime  string `json:"revision_time,omitempty"`
	Modified      bool   `json:"modified"`
	Go            string `json:"go"`
	FormatWritten string `json:"format_written"`
	FormatRead    string `json:"format_read"`
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the release, VCS revision, Go version and file formats of this build",
		Long: `version prints what this build of dabloomsctl is: the release of dablooms
(CHANGELOG.md), the module version and the VCS revision it was built from
(as Go recorded them in the binary; "(devel)" and "unknown" for a build
that recorded none, such as go build with -buildvcs=false; "with
uncommitted changes" after it when the tree had some), the Go version that
built it, and the versions of the file format it writes and reads.
dabloomsctl --version prints the same on one line. The C library's dablooms_version() and pydablooms.__version__ say the
same after the original's API version, "0.9.1+go".`,
		Example: `  dabloomsctl version
  dabloomsctl --version
  dabloomsctl version --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			i := version.Get()
			if a.json {
				return a.writeJSON(versionJSON{Schema: "dabloomsctl.version/v1", Release: i.Release, Module: version.ModulePath,
					Version: i.Module, Revision: i.Revision, RevisionTime: i.Time, Modified: i.Modified,
					Go: i.Go, FormatWritten: i.FormatWritten, FormatRead: i.FormatRead})
			}
			for _, l := range i.Lines() {
				fmt.Fprintln(a.stdout, l)
			}
			return nil
		},
	}
}

// setVersionFlag gives root a --version flag printing the build on one line.
func setVersionFlag(root *cobra.Command) {
	root.Version = version.Get().String()
	root.SetVersionTemplate("dabloomsctl {{.Version}}\n")
}
