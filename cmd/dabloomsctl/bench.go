package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

type benchResult struct {
	Name    string  `json:"name"`
	Ops     int     `json:"ops"`
	NsPerOp float64 `json:"ns_per_op"`
}

type benchJSON struct {
	Schema       string        `json:"schema"`
	Keys         int           `json:"keys"`
	Capacity     uint64        `json:"capacity"`
	ErrorRate    float64       `json:"error_rate"`
	FileSize     int64         `json:"file_size"`
	Filters      int           `json:"filters"`
	FalsePos     int           `json:"false_positives"`
	FalseNeg     int           `json:"false_negatives"`
	MeasuredFPR  float64       `json:"measured_fpr"`
	EstimatedFPR float64       `json:"estimated_fpr"`
	FlushMs      float64       `json:"flush_ms"`
	Results      []benchResult `json:"results"`
}

func newBenchCmd(a *app) *cobra.Command {
	var (
		keys      int
		capacity  uint64
		errorRate float64
		dir       string
	)
	cmd := &cobra.Command{
		Use:   "bench [--keys N]",
		Short: "Measure add, contains and remove on a temporary file",
		Long: `bench creates a temporary dablooms file (in --dir, default the system's
temporary directory; it is removed afterwards) and measures, in one
goroutine, the time per operation of:
  add             N distinct keys with increasing ids
  contains (hit)  the N keys (every answer must be true)
  contains (miss) N keys never added (the true answers are false positives)
  remove          the N keys with their ids
and the time of one flush. The numbers depend on the machine, the file
system and the page cache; they are for comparing, not for promising.
--capacity defaults to N, so the chain has one filter; a smaller capacity
shows the cost of a longer chain.`,
		Example: `  dabloomsctl bench
  dabloomsctl bench --keys 1000000 --capacity 100000 --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keys <= 0 {
				return usageErrorf("--keys must be at least 1")
			}
			if capacity == 0 {
				capacity = uint64(keys)
			}
			if errorRate <= 0 || errorRate >= 1 {
				return usageErrorf("--error-rate must be between 0 and 1 (exclusive)")
			}
			tmpDir, err := os.MkdirTemp(dir, "dabloomsctl-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmpDir)
			path := filepath.Join(tmpDir, "bench.dbl")
			f, err := scaling.Create(path, &scaling.Options{Capacity: capacity, ErrorRate: errorRate, LockTimeout: a.lockTimeout, BootID: a.bootID})
			if err != nil {
				return err
			}
			defer f.Close()
			ctx := cmd.Context()
			key := func(prefix byte, i int) []byte {
				return strconv.AppendInt([]byte{prefix, ':'}, int64(i), 10)
			}
			hit := make([][]byte, keys)
			miss := make([][]byte, keys)
			for i := range keys {
				hit[i], miss[i] = key('k', i), key('m', i)
			}
			res := benchJSON{Schema: "dabloomsctl.bench/v1", Keys: keys, Capacity: capacity, ErrorRate: errorRate}
			measure := func(name string, fn func(i int) error) error {
				a.logf("bench: %s ...", name)
				start := time.Now()
				for i := range keys {
					if i&1023 == 0 && ctx.Err() != nil {
						return ctx.Err()
					}
					if err := fn(i); err != nil {
						return err
					}
				}
				el := time.Since(start)
				res.Results = append(res.Results, benchResult{Name: name, Ops: keys, NsPerOp: float64(el.Nanoseconds()) / float64(keys)})
				return nil
			}
			if err := measure("add", func(i int) error { return f.Add(hit[i], uint64(i)+1) }); err != nil {
				return err
			}
			if err := measure("contains (hit)", func(i int) error {
				if !f.Contains(hit[i]) {
					res.FalseNeg++
				}
				return nil
			}); err != nil {
				return err
			}
			if err := measure("contains (miss)", func(i int) error {
				if f.Contains(miss[i]) {
					res.FalsePos++
				}
				return nil
			}); err != nil {
				return err
			}
			st := f.Stats()
			res.FileSize, res.Filters, res.EstimatedFPR = st.FileSize, len(st.Filters), st.EstimatedFPR
			res.MeasuredFPR = float64(res.FalsePos) / float64(keys)
			start := time.Now()
			if err := f.Flush(); err != nil {
				return err
			}
			res.FlushMs = float64(time.Since(start).Microseconds()) / 1000
			if err := measure("remove", func(i int) error { return f.Remove(hit[i], uint64(i)+1) }); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if res.FalseNeg > 0 {
				return fmt.Errorf("bench: %d false negatives: the filter lost keys", res.FalseNeg)
			}
			if a.json {
				return a.writeJSON(res)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(a.stdout, "%d keys, capacity %d, error rate %s: %d filter(s), %s\n",
				keys, capacity, fmtRate(errorRate), res.Filters, humanBytes(res.FileSize))
			fmt.Fprintf(w, "operation\tns/op\tops/s\t\n")
			for _, r := range res.Results {
				fmt.Fprintf(w, "%s\t%.0f\t%.0f\t\n", r.Name, r.NsPerOp, 1e9/r.NsPerOp)
			}
			w.Flush()
			fmt.Fprintf(a.stdout, "flush: %.2f ms\n", res.FlushMs)
			fmt.Fprintf(a.stdout, "false positives: %d of %d (%s; estimated %s, target %s)\n",
				res.FalsePos, keys, fmtRate(res.MeasuredFPR), fmtRate(res.EstimatedFPR), fmtRate(errorRate))
			return nil
		},
	}
	fs := cmd.Flags()
	fs.IntVarP(&keys, "keys", "n", 200_000, "number of keys")
	fs.Uint64Var(&capacity, "capacity", 0, "capacity of the first filter (default: --keys)")
	fs.Float64Var(&errorRate, "error-rate", 0.01, "false-positive bound")
	fs.StringVar(&dir, "dir", "", "directory for the temporary file (default the system's)")
	return cmd
}
