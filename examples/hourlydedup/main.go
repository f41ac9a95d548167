// Command hourlydedup dedups an event stream per hour with a dablooms file
// that retires its old filters: a sliding window on disk.
//
// The job: every event names an item, and each item that has events in an
// hour must be written to a downstream system (an expensive call) AT LEAST
// ONCE in that hour. Repeated events of the same item in the same hour
// should skip the write. The store remembers the pairs (item, hour) already
// written:
//
//	key = item|hour of the event, id = the event's timestamp (Unix seconds)
//	Contains(key) false  =>  write downstream, then Add(key, id)
//	Contains(key) true   =>  skip: written already this hour
//
// At the start of each hour H (by arrival time) it calls
// RetireBefore(start of hour H-1): only the current and the previous hour
// are kept (events arrive up to five minutes late, so the previous hour's
// pairs are still asked for), the retired filters' space is reused by the
// next ones, and the file stops growing.
//
// A Bloom filter has no false negatives: a pair it was told about is never
// forgotten before its hour is retired, so no pair is written twice. It
// does have false positives, and here a false positive SKIPS a write that
// was needed: a lost write. That cannot be made impossible with a Bloom
// filter alone; what the store promises is a bound. Each pair is asked
// for unwritten exactly once (its first event; a pair answered "present"
// then is never added, and keeps answering "present" all hour), and each
// such lookup is a false positive with probability at most the error rate
// p of the file (the sum of its filters' targets). So the expected number
// of lost writes is at most p × (pairs with events). The example keeps an
// exact map of the pairs written as the ground truth and checks every
// (item, hour) that had events against it. It uses p = 1e-6, which makes
// the bound 0.14 lost writes for the whole run of 960,000 events, and
// fails (exit status 1) if
//
//	lost writes > 3 + 2 × p × pairs
//
// (a Poisson count of mean 0.14 exceeds 3 with probability below 1e-4),
// or if any pair was written twice (a false negative: the filter forgot
// a pair inside the window). The default run loses none. A looser rate
// shows the price honestly: with -rate 0.01 some 400 of the 136,687
// needed writes are skipped (0.3%: the filters are below their targets
// most of the time), which is within that rate's bound, so the check
// passes, but it is no longer "none lost". Pick p so that p × pairs per
// retention period is a loss you accept; the filters grow only with
// log(1/p).
//
//	go run ./examples/hourlydedup              # 48 hours × 20,000 events over 5,000 items
//	go run ./examples/hourlydedup -rate 0.01   # see the false positives
//
// The file lives in a temporary directory, removed at the end.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dablooms/dablooms/scaling"
)

type config struct {
	hours    int     // hours of events
	perHour  int     // events per hour
	items    int     // distinct items (a skewed choice among them)
	rate     float64 // error-rate bound of the file
	capacity uint64  // items per filter (growth 1: every filter the same size)
	seed     uint64  // the event stream, and the file's hash seed
}

var defaultConfig = config{hours: 48, perHour: 20000, items: 5000, rate: 1e-6, capacity: 2000, seed: 42}

func main() {
	cfg := defaultConfig
	flag.IntVar(&cfg.hours, "hours", cfg.hours, "hours of events")
	flag.IntVar(&cfg.perHour, "events", cfg.perHour, "events per hour")
	flag.IntVar(&cfg.items, "items", cfg.items, "distinct items")
	flag.Float64Var(&cfg.rate, "rate", cfg.rate, "error-rate bound of the file: the chance that a needed write is skipped")
	flag.Parse()
	if err := run(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "hourlydedup:", err)
		os.Exit(1)
	}
}

// t0 is the first hour of the stream: 2025-01-01 00:00 UTC.
const t0 = 1735689600

// maxDelay is how late an event may arrive: up to five minutes.
const maxDelay = 300

type event struct {
	item    int32
	at      int64 // event time, Unix seconds: gives the hour and the id
	arrival int64 // when it reaches the deduper (at + 0..maxDelay)
}

// stream makes the synthetic events, in arrival order: each hour perHour
// events at uniform times, items drawn from a Zipf distribution (a few
// items have most events), one event in ten arriving up to maxDelay late.
func stream(cfg config) []event {
	r := rand.New(rand.NewPCG(cfg.seed, 0x686f75726c79))
	zipf := rand.NewZipf(r, 1.1, 2, uint64(cfg.items-1))
	evs := make([]event, 0, cfg.hours*cfg.perHour)
	for h := range cfg.hours {
		for range cfg.perHour {
			at := int64(t0 + h*3600 + r.IntN(3600))
			delay := int64(0)
			if r.IntN(10) == 0 {
				delay = 1 + r.Int64N(maxDelay)
			}
			evs = append(evs, event{item: int32(zipf.Uint64()), at: at, arrival: at + delay})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.arrival, b.arrival) })
	return evs
}

// pair is an item and the hour of one of its events: what must be written.
type pair struct {
	item int32
	hour int64
}

// errLost and errTwice are the failures of the check.
var (
	errLost  = errors.New("more writes were lost (false positives) than the error rate allows")
	errTwice = errors.New("a pair was written twice: the store forgot a pair inside the window")
)

func run(w io.Writer, cfg config) error {
	dir, err := os.MkdirTemp("", "hourlydedup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "written.dbl")
	f, err := scaling.Create(path, &scaling.Options{
		Capacity: cfg.capacity, ErrorRate: cfg.rate, GrowthFactor: 1, Seed: cfg.seed,
	})
	if err != nil {
		return err
	}
	defer f.Close()

	evs := stream(cfg)
	fmt.Fprintf(w, "stream: %d hours × %d events over %d items (Zipf), 1 in 10 up to %d s late: %d events\n",
		cfg.hours, cfg.perHour, cfg.items, maxDelay, len(evs))
	fmt.Fprintf(w, "store:  %s, filters of %d pairs, error rate %g; key item|hour, id = event time\n\n",
		filepath.Base(path), cfg.capacity, cfg.rate)

	var (
		written  = map[pair]int{}      // ground truth: downstream writes per pair
		hadEvent = map[pair]struct{}{} // every pair that had an event
		writes   int
		retired  int
		expected float64 // Σ over the pairs first seen each hour × the chain's estimated FPR at its end
		firsts   int     // pairs first seen this hour (asked for while unwritten)
		maxChain int
		key      []byte
	)
	hour := int64(-1) // arrival hour being processed
	endHour := func() error {
		// Make the hour's writes durable: a restart resumes with them.
		if err := f.Flush(); err != nil {
			return err
		}
		st := f.Stats()
		expected += float64(firsts) * st.EstimatedFPR
		firsts = 0
		maxChain = max(maxChain, len(st.Filters))
		if h := hour - t0/3600; h%8 == 7 || h == int64(cfg.hours-1) {
			fmt.Fprintf(w, "  hour %2d: %7d writes so far, %3d filters retired, chain %d filters, file %d KiB\n",
				h+1, writes, st.Retired, len(st.Filters), st.FileSize/1024)
		}
		return nil
	}
	for _, e := range evs {
		if h := e.arrival / 3600; h != hour {
			if hour >= 0 {
				if err := endHour(); err != nil {
					return err
				}
			}
			hour = h
			// Keep the current and the previous hour: late events of the
			// previous hour still arrive.
			n, err := f.RetireBefore(uint64((hour - 1) * 3600))
			if err != nil {
				return fmt.Errorf("retire: %w", err)
			}
			retired += n
		}
		p := pair{e.item, e.at / 3600}
		if _, seen := hadEvent[p]; !seen {
			hadEvent[p] = struct{}{}
			firsts++ // asked for while unwritten: a false positive here is a lost write
		}
		key = append(strconv.AppendInt(key[:0], int64(p.item), 10), '|')
		key = strconv.AppendInt(key, p.hour, 10)
		if f.Contains(key) {
			continue // written already this hour (or a false positive)
		}
		writes++ // the expensive downstream write
		written[p]++
		if err := f.Add(key, uint64(e.at)); err != nil {
			return err
		}
	}
	if err := endHour(); err != nil {
		return err
	}

	st := f.Stats()
	lost, twice := 0, 0
	for p := range hadEvent {
		switch written[p] {
		case 0:
			lost++
		case 1:
		default:
			twice++
		}
	}
	saved := len(evs) - writes
	bound := cfg.rate * float64(len(hadEvent))
	limit := 3 + 2*bound
	fmt.Fprintf(w, "\nevents:          %d\n", len(evs))
	fmt.Fprintf(w, "writes done:     %d, for %d (item, hour) pairs that had events\n", writes, len(hadEvent))
	fmt.Fprintf(w, "writes saved:    %d (%.1f%% of the events)\n", saved, 100*float64(saved)/float64(len(evs)))
	fmt.Fprintf(w, "filters retired: %d (RetireBefore each hour keeps the current hour and the one before)\n", retired)
	fmt.Fprintf(w, "chain length:    %d filters now, %d at most (entries reused: the ring)\n", len(st.Filters), maxChain)
	fmt.Fprintf(w, "file size:       %d KiB (%d bytes), constant once the ring turns\n", st.FileSize/1024, st.FileSize)
	fmt.Fprintf(w, "lost writes:     %d (false positives; expected %.3g from the filters' estimated rates, bound p × pairs = %.3g, fail above %.3g)\n",
		lost, expected, bound, limit)
	fmt.Fprintf(w, "written twice:   %d (must be 0: no false negatives inside the window)\n", twice)
	if twice > 0 {
		return errTwice
	}
	if float64(lost) > limit {
		fmt.Fprintf(w, "check: FAILED: %d of %d needed writes were skipped\n", lost, len(hadEvent))
		return errLost
	}
	if lost == 0 {
		fmt.Fprintf(w, "check: ok: every (item, hour) that had events was written, none lost, none twice\n")
	} else {
		fmt.Fprintf(w, "check: ok within the bound: %d of %d needed writes were skipped by false positives (at most %.3g allowed at error rate %g)\n",
			lost, len(hadEvent), limit, cfg.rate)
	}
	return f.Close()
}
