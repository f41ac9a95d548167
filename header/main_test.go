package header

import (
	"flag"
	"os"
	"testing"
)

// TestMain caps the fuzzer's minimization of new inputs at 2 s unless
// -fuzzminimizetime is given. Minimizing a byte input is quadratic in its
// length and inputs here run to 4 KiB, so with the default (60 s) a short
// run like -fuzztime=20s spends nearly all its time minimizing and almost
// none fuzzing.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		if err := flag.Set("test.fuzzminimizetime", "2s"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
