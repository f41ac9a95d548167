package main

import (
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

type flushJSON struct {
	Schema     string `json:"schema"`
	Path       string `json:"path"`
	Condition  string `json:"condition"`
	MemSeqnum  uint64 `json:"mem_seqnum"`
	DiskSeqnum uint64 `json:"disk_seqnum"`
}

func newFlushCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "flush FILE",
		Short: "Make every change so far durable and mark the file clean",
		Long: `flush makes everything written to the file so far, by every process, durable
(msync and fsync of the whole file). If no operation was in flight anywhere
while it synced, the file is also marked clean: disk_seqnum becomes
mem_seqnum. If another process was writing at that moment the data is
durable but the file stays marked changed (condition "unflushed"), because
that writer may already have changed it again; flush again when it is idle.

flush opens the file for writing (it takes a writer slot for a moment); it
refuses an interrupted or dirty file: repair it first.`,
		Example: `  dabloomsctl flush spam.dbl`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := a.openRW(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if err := f.Flush(); err != nil {
				return explain(args[0], err)
			}
			st := f.Stats()
			if err := f.Close(); err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(flushJSON{Schema: "dabloomsctl.flush/v1", Path: args[0], Condition: st.Condition.String(), MemSeqnum: st.MemSeqnum, DiskSeqnum: st.DiskSeqnum})
			}
			if st.Condition == scaling.Clean {
				a.logf("flushed %s: clean, disk_seqnum %d = mem_seqnum", args[0], st.DiskSeqnum)
			} else {
				a.logf("flushed %s: data durable, but another writer was active, so the file stays %s (mem_seqnum %d)", args[0], st.Condition, st.MemSeqnum)
			}
			return nil
		},
	}
}
