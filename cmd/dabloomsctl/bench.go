package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// benchOptions are the flags of bench.
type benchOptions struct {
	keys      int
	capacity  uint64
	errorRate float64
	dir       string
}

func (o *benchOptions) bindFlags(fs *pflag.FlagSet) {
	fs.IntVarP(&o.keys, "keys", "n", 200_000, "number of keys")
	fs.Uint64Var(&o.capacity, "capacity", 0, "capacity of the first filter (default: --keys)")
	fs.Float64Var(&o.errorRate, "error-rate", 0.01, "false-positive bound")
	fs.StringVar(&o.dir, "dir", "", "directory for the temporary file (default the system's)")
}

func newBenchCmd(a *app) *cobra.Command {
	var o benchOptions
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
			return a.runBench(cmd.Context(), o)
		},
	}
	o.bindFlags(cmd.Flags())
	return cmd
}

// runBench measures the operations on a temporary file and reports them.
func (a *app) runBench(ctx context.Context, o benchOptions) error {
	if o.keys <= 0 {
		return usageErrorf("--keys must be at least 1")
	}
	if o.capacity == 0 {
		o.capacity = uint64(o.keys)
	}
	if o.errorRate <= 0 || o.errorRate >= 1 {
		return usageErrorf("--error-rate must be between 0 and 1 (exclusive)")
	}
	tmpDir, err := os.MkdirTemp(o.dir, "dabloomsctl-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	path := filepath.Join(tmpDir, "bench.dbl")
	f, err := scaling.Create(path, withBootID(&scaling.Options{Capacity: o.capacity, ErrorRate: o.errorRate, LockTimeout: a.lockTimeout}, a.bootID))
	if err != nil {
		return err
	}
	defer f.Close()
	res := benchJSON{Schema: "dabloomsctl.bench/v1", Keys: o.keys, Capacity: o.capacity, ErrorRate: o.errorRate}
	if err := (&benchMeter{a: a, ctx: ctx, res: &res}).run(f); err != nil {
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
	a.writeBench(&res)
	return nil
}

// benchMeter times operations on res.Keys keys and records them in res.
type benchMeter struct {
	a   *app
	ctx context.Context
	res *benchJSON
}

// run measures add, contains of the keys added and of keys never added,
// one flush, and remove, on f.
func (m *benchMeter) run(f *scaling.Filter) error {
	res := m.res
	key := func(prefix byte, i int) []byte {
		return strconv.AppendInt([]byte{prefix, ':'}, int64(i), 10)
	}
	hit := make([][]byte, res.Keys)
	miss := make([][]byte, res.Keys)
	for i := range res.Keys {
		hit[i], miss[i] = key('k', i), key('m', i)
	}
	if err := m.measure("add", func(i int) error { return f.Add(hit[i], uint64(i)+1) }); err != nil {
		return err
	}
	if err := m.measure("contains (hit)", func(i int) error {
		if !f.Contains(hit[i]) {
			res.FalseNeg++
		}
		return nil
	}); err != nil {
		return err
	}
	if err := m.measure("contains (miss)", func(i int) error {
		if f.Contains(miss[i]) {
			res.FalsePos++
		}
		return nil
	}); err != nil {
		return err
	}
	st := f.Stats()
	res.FileSize, res.Filters, res.EstimatedFPR = st.FileSize, len(st.Filters), st.EstimatedFPR
	res.MeasuredFPR = float64(res.FalsePos) / float64(res.Keys)
	start := time.Now()
	if err := f.Flush(); err != nil {
		return err
	}
	res.FlushMs = float64(time.Since(start).Microseconds()) / 1000
	return m.measure("remove", func(i int) error { return f.Remove(hit[i], uint64(i)+1) })
}

// measure times fn on every key index and appends the result.
func (m *benchMeter) measure(name string, fn func(i int) error) error {
	m.a.logf("bench: %s ...", name)
	start := time.Now()
	for i := range m.res.Keys {
		if i&1023 == 0 && m.ctx.Err() != nil {
			return m.ctx.Err()
		}
		if err := fn(i); err != nil {
			return err
		}
	}
	el := time.Since(start)
	m.res.Results = append(m.res.Results, benchResult{Name: name, Ops: m.res.Keys, NsPerOp: float64(el.Nanoseconds()) / float64(m.res.Keys)})
	return nil
}

// writeBench writes the text report of a bench.
func (a *app) writeBench(res *benchJSON) {
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(a.stdout, "%d keys, capacity %d, error rate %s: %d filter(s), %s\n",
		res.Keys, res.Capacity, fmtRate(res.ErrorRate), res.Filters, humanBytes(res.FileSize))
	fmt.Fprintf(w, "operation\tns/op\tops/s\t\n")
	for _, r := range res.Results {
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t\n", r.Name, r.NsPerOp, 1e9/r.NsPerOp)
	}
	w.Flush()
	fmt.Fprintf(a.stdout, "flush: %.2f ms\n", res.FlushMs)
	fmt.Fprintf(a.stdout, "false positives: %d of %d (%s; estimated %s, target %s)\n",
		res.FalsePos, res.Keys, fmtRate(res.MeasuredFPR), fmtRate(res.EstimatedFPR), fmtRate(res.ErrorRate))
}
