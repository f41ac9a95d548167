package legacy

import (
	"bufio"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// readTSV returns the rows of a testdata .tsv file, without its # header.
func readTSV(t *testing.T, name string, cols int) [][]string {
	t.Helper()
	f, err := os.Open(testdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		r := strings.Split(sc.Text(), "\t")
		if len(r) != cols {
			t.Fatalf("%s: %d columns in %q", name, len(r), sc.Text())
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func num[T uint64 | int | float64](t *testing.T, s string) T {
	t.Helper()
	var v T
	var err error
	switch p := any(&v).(type) {
	case *uint64:
		*p, err = strconv.ParseUint(s, 10, 64)
	case *int:
		*p, err = strconv.Atoi(s)
	case *float64:
		*p, err = strconv.ParseFloat(s, 64)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLayoutVectors checks every row of vectors_layout.tsv, the original's sizing, including
// the floating-point intermediates (k_arg, cpf_arg) bit for bit.
func TestLayoutVectors(t *testing.T) {
	rows := readTSV(t, "vectors_layout.tsv", 11)
	if len(rows) != 726 {
		t.Fatalf("vectors_layout.tsv has %d rows, want 726", len(rows))
	}
	goLogDiffers := 0
	for _, r := range rows {
		capacity, e, i := num[uint64](t, r[0]), num[float64](t, r[1]), num[int](t, r[2])
		l, err := Layout(capacity, e, i)
		if err != nil {
			t.Errorf("%v: %v", r, err)
			continue
		}
		kArg, k, _ := kOf(l.ErrorRate)
		cpfArg := cpfOf(capacity, l.ErrorRate, k)
		got := []float64{l.ErrorRate, kArg, float64(l.K), cpfArg, float64(l.CountsPerFunc), float64(l.Counters), float64(l.Bytes), float64(l.Offset)}
		for c, g := range got {
			if w := num[float64](t, r[3+c]); g != w {
				t.Errorf("capacity %d error %g filter %d: column %d is %v, want %v", capacity, e, i, 4+c, g, w)
			}
		}
		goLn2 := math.Log(2)
		if math.Log(1/l.ErrorRate)/goLn2 != kArg || float64(capacity)*math.Abs(math.Log(l.ErrorRate))/(float64(k)*(goLn2*goLn2)) != cpfArg {
			goLogDiffers++
		}
	}
	t.Logf("math.Log would give other intermediates on %d rows", goLogDiffers)
}

func TestCountingLayout(t *testing.T) {
	l, err := CountingLayout(1000, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if want := (FilterLayout{ErrorRate: 0.05, K: 5, CountsPerFunc: 1248, Counters: 6240, Bytes: 3136}); l != want {
		t.Errorf("CountingLayout(1000, 0.05) = %+v, want %+v", l, want)
	}
}

func TestLayoutBadParams(t *testing.T) {
	for _, c := range []struct {
		capacity uint64
		e        float64
		filter   int
	}{
		{0, 0.05, 0},
		{math.MaxUint32 + 1, 0.05, 0},
		{1000, 0, 0},
		{1000, -0.1, 0},
		{1000, 1, 0},
		{1000, 1.5, 0},
		{1000, math.NaN(), 0},
		{1000, math.Inf(1), 0},
		{1000, math.Inf(-1), 0},
		{1000, 0.05, -1},
		{1000, 0.05, 1100},           // 0.05·2^-1101 underflows to 0
		{1000, 1e-300, 100},          // 1/p overflows
		{math.MaxUint32, 1e-9, 0},    // more than 2^31-1 counters per function
		{math.MaxUint32, 0.0001, 10}, // idem
	} {
		if _, err := Layout(c.capacity, c.e, c.filter); !errors.Is(err, ErrBadParams) {
			t.Errorf("Layout(%d, %g, %d) error %v, want ErrBadParams", c.capacity, c.e, c.filter, err)
		}
		if c.filter == 0 {
			if _, err := CountingLayout(c.capacity, c.e); !errors.Is(err, ErrBadParams) {
				t.Errorf("CountingLayout(%d, %g) error %v, want ErrBadParams", c.capacity, c.e, err)
			}
		}
	}
	// The largest the original could size.
	if l, err := Layout(1_000_000_000, 0.01, 0); err != nil || l.CountsPerFunc < 1<<30 {
		t.Errorf("Layout(1e9, 0.01, 0) = %+v, %v", l, err)
	}
}

func TestLn(t *testing.T) {
	if ln(2) != math.Ln2 || ln(1) != 0 || ln(math.E) != 1 || ln(5e-324) != -1074*math.Ln2 {
		t.Errorf("ln(2) = %v, ln(1) = %v, ln(e) = %v, ln(2^-1074) = %v", ln(2), ln(1), ln(math.E), ln(5e-324))
	}
	for _, x := range []float64{1e-300, 0.025, 0.5, 0.9999999999999999, 1.0000000000000002, 40, 1e300, math.MaxFloat64} {
		if d := math.Abs(ln(x) - math.Log(x)); d > ulp(math.Log(x)) {
			t.Errorf("ln(%g) = %v, math.Log %v", x, ln(x), math.Log(x))
		}
	}
}

// TestLnRandom: ln is within one ulp of math.Log (which is within one ulp of the truth).
func TestLnRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		x := math.Float64frombits(r.Uint64N(0x7fe0000000000000) + 0x0010000000000000) // normal, > 0
		if d := math.Abs(ln(x) - math.Log(x)); d > ulp(math.Log(x)) {
			t.Fatalf("ln(%g) = %v, math.Log %v", x, ln(x), math.Log(x))
		}
	}
}

func ulp(x float64) float64 {
	return math.Nextafter(math.Abs(x), math.Inf(1)) - math.Abs(x)
}
