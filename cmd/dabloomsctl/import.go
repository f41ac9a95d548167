package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dablooms/dablooms/legacy"

	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

type importJSON struct {
	Schema     string `json:"schema"`
	Old        string `json:"old"`
	New        string `json:"new"`
	Kind       string `json:"kind"`
	Filters    int    `json:"filters"`
	MaxID      uint64 `json:"max_id"`
	MemSeqnum  uint64 `json:"mem_seqnum"`
	DiskSeqnum uint64 `json:"disk_seqnum"`
	State      string `json:"original_state"`
	Condition  string `json:"condition"`
	FileSize   int64  `json:"file_size"`
}

func newImportCmd(a *app) *cobra.Command {
	var (
		capacity  uint64
		errorRate float64
		counting  bool
		force     bool
	)
	c := &cobra.Command{
		Use:   "import-dablooms OLD NEW --capacity C --error-rate P",
		Short: "Convert a file of the original C dablooms 0.9.1 into this format",
		Long: `import-dablooms converts a scaling filter file written by the original C
dablooms 0.9.1 (or, with --counting, its single counting-filter file) into a
new file in this project's format. OLD is only read, never changed.

The original's files carry no parameters: give the capacity and error rate
it was created with. A file whose size does not match the layout those
parameters imply is refused, with the sizes they would imply. A file that
is already in this format is recognised and refused: there is nothing to
import.

The converted filters keep the original's hash (MurmurHash3, seed
0x97c29b3a) and layout, so every key gets exactly the answer it got before.
From then on NEW behaves as a normal file: filters appended later use the
native hash. The original's seqnums are carried over: a clean original
(disk_seqnum = mem_seqnum) gives a clean file, an unflushed one an
"unflushed" file, and an interrupted one (mem_seqnum 0: a process died
mid-operation) a file marked dirty, which must be rebuilt (repair
--rebuild-from) before it can be trusted.`,
		Example: `  dabloomsctl import-dablooms old.bin new.dbl --capacity 1000 --error-rate 0.05
  dabloomsctl import-dablooms counting.bin new.dbl --capacity 1000 --error-rate 0.05 --counting`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if capacity == 0 || errorRate == 0 {
				return usageErrorf("--capacity and --error-rate are required: the original's files do not record them")
			}
			if err := checkFile(args[0]); err != nil {
				return err
			}
			if startsWithMagic(args[0]) {
				// The original's files have no magic; this format's do.
				return fmt.Errorf("%s is already a dablooms file of this format, not one of the original C dablooms: there is nothing to import; use it as it is ('dabloomsctl inspect %s' shows it, 'dabloomsctl backup' copies it)", args[0], args[0])
			}
			imp, kind := scaling.ImportDablooms, "scaling"
			if counting {
				imp, kind = scaling.ImportDabloomsCounting, "counting"
			}
			f, rep, err := imp(args[1], args[0], capacity, errorRate, withBootID(&scaling.Options{Overwrite: force, LockTimeout: a.lockWait()}, a.bootID))
			if err != nil {
				if errors.Is(err, legacy.ErrSizeMismatch) {
					// "OLD: legacy: file size does not match parameters:
					// file is N bytes; ...: not a dablooms 0.9.1 file with
					// these parameters": the words between.
					detail := err.Error()
					if i := strings.Index(detail, legacy.ErrSizeMismatch.Error()+": "); i >= 0 {
						detail = detail[i+len(legacy.ErrSizeMismatch.Error())+2:]
					}
					detail = strings.TrimSuffix(detail, ": not a dablooms 0.9.1 file with these parameters")
					return &userError{msg: fmt.Sprintf("%s is not a file of the original C dablooms 0.9.1 made with --capacity %d --error-rate %g: %s", args[0], capacity, errorRate, detail), err: err}
				}
				if !exists(args[0]) {
					return explain(args[0], err)
				}
				return explain(args[1], err)
			}
			defer f.Close()
			st := f.Stats()
			if err := f.Close(); err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(importJSON{
					Schema: "dabloomsctl.import/v1", Old: args[0], New: args[1], Kind: kind,
					Filters: rep.Filters, MaxID: rep.MaxID, MemSeqnum: rep.MemSeqnum, DiskSeqnum: rep.DiskSeqnum,
					State: rep.State.String(), Condition: st.Condition.String(), FileSize: st.FileSize,
				})
			}
			ids := fmt.Sprintf("max_id %d", rep.MaxID)
			if counting {
				// The original's counting file has no ids: any id
				// routes to its one filter.
				ids = "no ids"
			}
			a.logf("imported %s (%s file, %d filter(s), %s, mem_seqnum %d, disk_seqnum %d: %s) into %s: %s, %d bytes",
				args[0], kind, rep.Filters, ids, rep.MemSeqnum, rep.DiskSeqnum, rep.State, args[1], st.Condition, st.FileSize)
			if st.Condition != scaling.Clean && st.Condition != scaling.Unflushed {
				return uncleanf("the original was %s: rebuild the new file from your data (repair --rebuild-from)", rep.State)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.Uint64Var(&capacity, "capacity", 0, "capacity the original file was created with (required)")
	fl.Float64Var(&errorRate, "error-rate", 0, "error rate the original file was created with (required)")
	fl.BoolVar(&counting, "counting", false, "OLD is a single counting-filter file, not a scaling file")
	fl.BoolVar(&force, "force", false, "replace NEW if it exists")
	return c
}
