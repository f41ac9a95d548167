package main

import (
	"strconv"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
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

func newCreateCmd(a *app) *cobra.Command {
	var (
		capacity   uint64
		errorRate  float64
		growth     float64
		tightening float64
		seed       string
		layout     string
		force      bool
	)
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
			fs := cmd.Flags()
			if !flagChanged(fs, "capacity") || !flagChanged(fs, "error-rate") {
				return usageErrorf("create needs --capacity and --error-rate")
			}
			if capacity == 0 {
				return usageErrorf("--capacity must be at least 1")
			}
			o := &scaling.Options{
				Capacity: capacity, ErrorRate: errorRate, GrowthFactor: growth,
				TighteningRatio: tightening, Overwrite: force, LockTimeout: a.lockTimeout, BootID: a.bootID,
			}
			if seed != "" {
				s, err := strconv.ParseUint(seed, 0, 64)
				if err != nil || s == 0 {
					return usageErrorf("--seed must be a non-zero uint64 (decimal or 0x hex), not %q", seed)
				}
				o.Seed = s
			}
			switch layout {
			case "blocked1024", "blocked":
				o.Layout = counting4.Blocked1024
			case "blocked512":
				o.Layout = counting4.Blocked512
			case "classic":
				o.Layout = counting4.Classic
			default:
				return usageErrorf("--layout must be blocked1024, blocked512 or classic, not %q", layout)
			}
			if errorRate <= 0 || errorRate >= 1 {
				return usageErrorf("--error-rate must be between 0 and 1 (exclusive), not %v", errorRate)
			}
			if growth < 1 {
				return usageErrorf("--growth must be at least 1, not %v", growth)
			}
			if tightening <= 0 || tightening >= 1 {
				return usageErrorf("--tightening must be between 0 and 1 (exclusive), not %v", tightening)
			}
			f, err := scaling.Create(args[0], o)
			if err != nil {
				return err
			}
			st := f.Stats()
			p := f.Params()
			if err := f.Close(); err != nil {
				return err
			}
			out := createJSON{
				Schema: "dabloomsctl.create/v1", Path: args[0], FileSize: st.FileSize,
				Params: toParamsJSON(p), Filters: len(st.Filters),
			}
			if len(st.Filters) > 0 {
				out.K, out.Counters = st.Filters[0].K, st.Filters[0].Counters
			}
			if a.json {
				return a.writeJSON(out)
			}
			a.logf("created %s: capacity %d, error rate %s, growth %g, tightening %g, %s layout, k=%d, %d counters, %s",
				args[0], p.Capacity, fmtRate(p.ErrorRate), p.GrowthFactor, p.TighteningRatio,
				out.Params.Layout, out.K, out.Counters, humanBytes(st.FileSize))
			return nil
		},
	}
	fs := cmd.Flags()
	fs.Uint64Var(&capacity, "capacity", 0, "items the first filter holds (required)")
	fs.Float64Var(&errorRate, "error-rate", 0, "false-positive bound of the whole chain, 0 < P < 1 (required)")
	fs.Float64Var(&growth, "growth", scaling.DefaultGrowthFactor, "capacity multiplier of each new filter (1 = no growth)")
	fs.Float64Var(&tightening, "tightening", scaling.DefaultTighteningRatio, "error-target multiplier of each new filter, 0 < R < 1")
	fs.StringVar(&seed, "seed", "", "hash seed, decimal or 0x hex (default random)")
	fs.StringVar(&layout, "layout", "blocked1024", "counter layout: blocked1024 (one 128-byte block per key), blocked512 (one 64-byte cache line: faster, larger) or classic")
	fs.BoolVarP(&force, "force", "f", false, "replace an existing file")
	return cmd
}
