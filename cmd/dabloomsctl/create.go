package main

import (
	"strconv"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// paramsJSON is the "params" object of the JSON schemas.
type paramsJSON struct {
	Capacity        uint64  `json:"capacity"`
	ErrorRate       float64 `json:"error_rate"`
	GrowthFactor    float64 `json:"growth_factor"`
	TighteningRatio float64 `json:"tightening_ratio"`
	Seed            string  `json:"seed"` // hex, as a string: JSON numbers lose uint64 precision
	Hash            string  `json:"hash"`
	Layout          string  `json:"layout"`
}

func toParamsJSON(p header.Params) paramsJSON {
	return paramsJSON{
		Capacity: p.Capacity, ErrorRate: p.ErrorRate, GrowthFactor: p.GrowthFactor,
		TighteningRatio: p.TighteningRatio, Seed: hex64(p.Seed),
		Hash: header.HashName(p.HashID), Layout: layoutName(p.LayoutID),
	}
}

func layoutName(id uint32) string {
	return counting4.Layout(id).String()
}

type createJSON struct {
	Schema   string     `json:"schema"`
	Path     string     `json:"path"`
	FileSize int64      `json:"file_size"`
	Params   paramsJSON `json:"params"`
	Filters  int        `json:"filters"`
	K        int        `json:"k"`
	Counters uint64     `json:"counters"`
}

// createOptions are the flags of create.
type createOptions struct {
	capacity   uint64
	errorRate  float64
	growth     float64
	tightening float64
	seed       string
	layout     string
	force      bool
}

func (o *createOptions) bindFlags(fs *pflag.FlagSet) {
	fs.Uint64Var(&o.capacity, "capacity", 0, "items the first filter holds (required)")
	fs.Float64Var(&o.errorRate, "error-rate", 0, "false-positive bound of the whole chain, 0 < P < 1 (required)")
	fs.Float64Var(&o.growth, "growth", scaling.DefaultGrowthFactor, "capacity multiplier of each new filter (1 = no growth)")
	fs.Float64Var(&o.tightening, "tightening", scaling.DefaultTighteningRatio, "error-target multiplier of each new filter, 0 < R < 1")
	fs.StringVar(&o.seed, "seed", "", "hash seed, decimal or 0x hex (default random)")
	fs.StringVar(&o.layout, "layout", "blocked1024", "counter layout: blocked1024 (one 128-byte block per key), blocked512 (one 64-byte cache line: faster, larger) or classic")
	fs.BoolVarP(&o.force, "force", "f", false, "replace an existing file")
}

// scalingOptions checks the flags (fs says which were given) and returns
// the options of scaling.Create they stand for.
func (o *createOptions) scalingOptions(fs *pflag.FlagSet) (*scaling.Options, error) {
	if !flagChanged(fs, "capacity") || !flagChanged(fs, "error-rate") {
		return nil, usageErrorf("create needs --capacity and --error-rate")
	}
	if o.capacity == 0 {
		return nil, usageErrorf("--capacity must be at least 1")
	}
	so := &scaling.Options{
		Capacity: o.capacity, ErrorRate: o.errorRate, GrowthFactor: o.growth,
		TighteningRatio: o.tightening, Overwrite: o.force,
	}
	if o.seed != "" {
		s, err := strconv.ParseUint(o.seed, 0, 64)
		if err != nil || s == 0 {
			return nil, usageErrorf("--seed must be a non-zero uint64 (decimal or 0x hex), not %q", o.seed)
		}
		so.Seed = s
	}
	switch o.layout {
	case "blocked1024", "blocked":
		so.Layout = counting4.Blocked1024
	case "blocked512":
		so.Layout = counting4.Blocked512
	case "classic":
		so.Layout = counting4.Classic
	default:
		return nil, usageErrorf("--layout must be blocked1024, blocked512 or classic, not %q", o.layout)
	}
	switch {
	case o.errorRate <= 0 || o.errorRate >= 1:
		return nil, usageErrorf("--error-rate must be between 0 and 1 (exclusive), not %v", o.errorRate)
	case o.growth < 1:
		return nil, usageErrorf("--growth must be at least 1, not %v", o.growth)
	case o.tightening <= 0 || o.tightening >= 1:
		return nil, usageErrorf("--tightening must be between 0 and 1 (exclusive), not %v", o.tightening)
	}
	return so, nil
}

func newCreateCmd(a *app) *cobra.Command {
	var o createOptions
	cmd := &cobra.Command{
		Use:   "create FILE --capacity N --error-rate P",
		Short: "Create a new dablooms file",
		Long: `create makes a new, empty dablooms file.

--capacity is the number of items the first filter holds; when it is full a
new filter is appended whose capacity is --growth times larger (1 = no
growth) and whose false-positive target is --tightening times smaller, so
that the whole chain stays below --error-rate. Parameters are stored in the
file; later commands need only the path.

An existing file is refused unless --force is given.`,
		Example: `  dabloomsctl create spam.dbl --capacity 1000000 --error-rate 0.001
  dabloomsctl create t.dbl --capacity 1000 --error-rate 0.01 --growth 2 --tightening 0.8 --force`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runCreate(args[0], &o, cmd.Flags())
		},
	}
	o.bindFlags(cmd.Flags())
	cmd.RegisterFlagCompletionFunc("layout", cobra.FixedCompletions([]string{"blocked1024", "blocked512", "classic"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// runCreate creates the file path with the flags o (fs says which were
// given) and reports it.
func (a *app) runCreate(path string, o *createOptions, fs *pflag.FlagSet) error {
	so, err := o.scalingOptions(fs)
	if err != nil {
		return err
	}
	so.LockTimeout = a.lockWait()
	f, err := scaling.Create(path, withBootID(so, a.bootID))
	if err != nil {
		return explain(path, err)
	}
	st := f.Stats()
	p := f.Params()
	if err := f.Close(); err != nil {
		return err
	}
	out := createJSON{
		Schema: "dabloomsctl.create/v1", Path: path, FileSize: st.FileSize,
		Params: toParamsJSON(p), Filters: len(st.Filters),
	}
	if len(st.Filters) > 0 {
		out.K, out.Counters = st.Filters[0].K, st.Filters[0].Counters
	}
	if a.json {
		return a.writeJSON(out)
	}
	a.logf("created %s: capacity %d, error rate %s, growth %g, tightening %g, %s layout, k=%d, %d counters, %s",
		path, p.Capacity, fmtRate(p.ErrorRate), p.GrowthFactor, p.TighteningRatio,
		out.Params.Layout, out.K, out.Counters, humanBytes(st.FileSize))
	return nil
}
