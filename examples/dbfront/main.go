// Command dbfront puts a dablooms filter in front of a SQLite database (the
// pure-Go modernc.org/sqlite driver: no cgo, no setup). A table of spam links
// is the source of truth; the filter holds every link with its row id as
// the filter id, so that:
//
//   - a lookup asks the database only when the filter says "maybe", and the
//     example counts the queries the filter saved;
//
//   - a deletion passes the row id it deleted to Remove, which uses it to
//     find the filter holding the link;
//
//   - after a simulated operating-system crash (the filter changed since its
//     last flush, the pages of the changed filter were lost, and the machine
//     "restarted": the demo writes an earlier boot's identity where the file
//     keeps the one recorded with its dirty mark), recover.Rebuild rebuilds
//     only the filters marked dirty, each from the rows of its id range, with
//     a SELECT by rowid.
//
// It is a module of its own, so that the library's go.mod needs no SQLite
// driver; run it from its directory:
//
//	cd examples/dbfront
//	go run .          # 20,000 links, 100,000 lookups
//	go run . -short   # 2,000 links, 10,000 lookups (CI)
//	go run . -metrics :9100 -serve   # then serve /metrics until interrupted
//
// It exits with status 1 if any link in the database is missing from the
// filter at the end.
package main

import (
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/metrics"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	_ "modernc.org/sqlite"
)

type config struct {
	links   int // spam links inserted before the flush
	lookups int // URLs looked up
	// metrics is the address at which the end of the demo serves the
	// filter's Prometheus metrics (/metrics); "" serves none. serve keeps
	// serving them until the program is interrupted.
	metrics string
	serve   bool
}

func main() {
	short := flag.Bool("short", os.Getenv("DABLOOMS_EXAMPLE_SHORT") != "", "2,000 links and 10,000 lookups (also DABLOOMS_EXAMPLE_SHORT=1)")
	addr := flag.String("metrics", "127.0.0.1:0", "address at which to serve the filter's metrics at /metrics (\"\": none)")
	serve := flag.Bool("serve", false, "after the demo, serve /metrics until interrupted")
	flag.Parse()
	cfg := config{links: 20000, lookups: 100000}
	if *short {
		cfg = config{links: 2000, lookups: 10000}
	}
	cfg.metrics, cfg.serve = *addr, *serve
	if err := run(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "dbfront:", err)
		os.Exit(1)
	}
}

// earlierBoot stands for the boot identity of the machine before the crash:
// the demo writes it into the file where the dirty mark's boot is kept, so
// that this run, on the machine's real boot, looks like the next boot.
const earlierBoot = "earlier-boot"

func spamURL(i int) string  { return fmt.Sprintf("http://spam-%d.example/win", i) }
func cleanURL(i int) string { return fmt.Sprintf("https://site-%d.example/page", i) }

type store struct {
	db      *sql.DB
	f       *scaling.Filter
	queries int // database lookups made
	saved   int // database lookups the filter made unnecessary
	fp      int // filter said maybe, the database said no
}

// isSpam answers from the filter when it can, else from the database.
func (s *store) isSpam(url string) (bool, error) {
	if !s.f.ContainsString(url) {
		s.saved++
		return false, nil // certainly not in the table
	}
	s.queries++
	var id int64
	err := s.db.QueryRow(`SELECT id FROM spam_links WHERE url = ?`, url).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		s.fp++
		return false, nil
	}
	return err == nil, err
}

// insert adds rows in one transaction, and each link to the filter with
// its row id as the filter id, before the commit: if the process dies
// before the commit, the filter holds a link the table does not (a false
// positive, harmless); the other order could lose a link (a false negative).
func (s *store) insert(urls []string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, url := range urls {
		res, err := tx.Exec(`INSERT INTO spam_links (url) VALUES (?)`, url)
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if err := s.f.AddString(url, uint64(id)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// remove deletes rows in one transaction and, after the commit, removes
// each link from the filter with the row id it had: a crash in between
// leaves a link in the filter that the table no longer has (harmless).
func (s *store) remove(urls []string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ids := make([]int64, len(urls))
	for i, url := range urls {
		if err := tx.QueryRow(`DELETE FROM spam_links WHERE url = ? RETURNING id`, url).Scan(&ids[i]); err != nil {
			return fmt.Errorf("delete %s: %w", url, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for i, url := range urls {
		if err := s.f.RemoveString(url, uint64(ids[i])); err != nil {
			return fmt.Errorf("remove %s (id %d): %w", url, ids[i], err)
		}
	}
	return nil
}

// source is recover.Rebuild's view of the database: the links whose row id
// lies in [first, last].
func source(db *sql.DB) recover.Source {
	return func(first, last uint64, add func(key []byte, id uint64) error) error {
		first, last = min(first, math.MaxInt64), min(last, math.MaxInt64)
		rows, err := db.Query(`SELECT url, id FROM spam_links WHERE id BETWEEN ? AND ? ORDER BY id`, int64(first), int64(last))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var url string
			var id int64
			if err := rows.Scan(&url, &id); err != nil {
				return err
			}
			if err := add([]byte(url), uint64(id)); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// missing counts the links of the table that the filter says are absent.
func missing(db *sql.DB, f *scaling.Filter) (int, int, error) {
	rows, err := db.Query(`SELECT url FROM spam_links`)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	n, miss := 0, 0
	for rows.Next() {
		var url string
		if err := rows.Scan(&url); err != nil {
			return 0, 0, err
		}
		n++
		if !f.ContainsString(url) {
			miss++
		}
	}
	return n, miss, rows.Err()
}

func run(w io.Writer, cfg config) error {
	dir, err := os.MkdirTemp("", "dablooms-dbfront-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbPath, filterPath := filepath.Join(dir, "links.db"), filepath.Join(dir, "links.dbl")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE spam_links (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE)`); err != nil {
		return err
	}
	f, err := scaling.Create(filterPath, &scaling.Options{Capacity: uint64(cfg.links / 2), ErrorRate: 0.01})
	if err != nil {
		return err
	}
	s := &store{db: db, f: f}
	defer func() {
		if s.f != nil {
			s.f.Close()
		}
	}()

	// 1. Fill the table and the filter.
	var urls []string
	for i := range cfg.links {
		urls = append(urls, spamURL(i))
	}
	if err := s.insert(urls); err != nil {
		return err
	}
	fmt.Fprintf(w, "inserted %d spam links; each row id is the link's filter id (%d filters in the chain)\n", cfg.links, len(f.Stats().Filters))

	// 2. Look up URLs, 1 in 10 of them spam: the filter answers "no" for
	//    almost all of the others without asking the database.
	r := rand.New(rand.NewPCG(7, 7))
	spamSeen := 0
	for i := range cfg.lookups {
		url := cleanURL(i)
		if i%10 == 0 {
			url = spamURL(r.IntN(cfg.links))
		}
		spam, err := s.isSpam(url)
		if err != nil {
			return err
		}
		if spam {
			spamSeen++
		}
	}
	fmt.Fprintf(w, "looked up %d URLs: %d spam, %d database queries, %d saved by the filter (%.1f%%), %d false positives (filter \"maybe\", database \"no\")\n",
		cfg.lookups, spamSeen, s.queries, s.saved, 100*float64(s.saved)/float64(cfg.lookups), s.fp)

	// 3. Delete a tenth of the links, passing each deleted row id to Remove.
	urls = urls[:0]
	for i := 0; i < cfg.links; i += 10 {
		urls = append(urls, spamURL(i))
	}
	if err := s.remove(urls); err != nil {
		return err
	}
	deleted := len(urls)
	stillSaid := 0
	for i := 0; i < cfg.links; i += 10 {
		if s.f.ContainsString(spamURL(i)) {
			stillSaid++
		}
	}
	fmt.Fprintf(w, "deleted %d links (DELETE ... RETURNING id, commit, then Remove(url, id)); the filter still says \"maybe\" for %d of them (false positives)\n", deleted, stillSaid)

	if err := f.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "flushed: condition %s, disk_seqnum %d\n", f.Condition(), f.DiskSeqnum())

	// 4. More links after the flush: they go to the newest filter, which
	//    is then the only one marked dirty.
	added := cfg.links / 10
	urls = urls[:0]
	for i := cfg.links; i < cfg.links+added; i++ {
		urls = append(urls, spamURL(i))
	}
	if err := s.insert(urls); err != nil {
		return err
	}
	st := f.Stats()
	newest := st.Filters[len(st.Filters)-1]
	fmt.Fprintf(w, "inserted %d more links after the flush into filter %d (ids %d..%d)\n", added, newest.Index, newest.FirstID, newest.LastID)

	// 5. The crash: the machine goes down before the next flush. The
	//    database is durable (the INSERTs were committed), but the page cache
	//    held the filter's counters: simulate losing them by zeroing the
	//    counters of the filters changed since the flush, and the restart by
	//    giving the dirty mark the boot identity of an earlier boot.
	s.f.Close()
	s.f = nil
	if err := zeroDirty(filterPath, st.Filters); err != nil {
		return err
	}
	if err := markEarlierBoot(filterPath); err != nil {
		return err
	}
	_, err = scaling.Open(filterPath, nil)
	var se *scaling.StateError
	if !errors.As(err, &se) {
		return fmt.Errorf("opening after the crash: want a *scaling.StateError, got %v", err)
	}
	fmt.Fprintf(w, "crash: the machine restarted; Open refuses the filter: %v\n", err)
	g, err := scaling.Open(filterPath, &scaling.OpenOptions{AllowUnclean: true, ReadOnly: true})
	if err != nil {
		return err
	}
	var dirty []int
	for _, fs := range g.Stats().Filters {
		if fs.Dirty {
			dirty = append(dirty, fs.Index)
		}
	}
	total, miss, err := missing(db, g)
	cond := g.Condition()
	g.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "opened anyway (AllowUnclean): condition %s, filters marked dirty: %v; %d of the %d links in the database are missing from the filter\n",
		cond, dirty, miss, total)

	// 6. Rebuild the dirty filters from the database, by id range.
	rep, err := recover.Rebuild(filterPath, source(db), nil)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	for _, a := range rep.Actions {
		fmt.Fprintf(w, "  rebuild: %s\n", a)
	}
	fmt.Fprintf(w, "rebuilt from the database (SELECT url, id FROM spam_links WHERE id BETWEEN first AND last): state %s\n", rep.State)
	s.f, err = scaling.Open(filterPath, nil)
	if err != nil {
		return fmt.Errorf("reopening after the rebuild: %w", err)
	}
	total, miss, err = missing(db, s.f)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "after the rebuild: condition %s, %d of the %d links in the database are missing from the filter\n", s.f.Condition(), miss, total)
	if miss > 0 {
		return fmt.Errorf("%d links of the database are missing from the filter (false negatives)", miss)
	}
	fmt.Fprintln(w, "no false negatives: every link in the database is in the filter")
	if cfg.metrics != "" {
		return serveMetrics(w, s.f, cfg)
	}
	return nil
}

// serveMetrics serves f's metrics (the module github.com/dablooms/dablooms/
// metrics) at /metrics on cfg.metrics, scrapes them once and prints what
// an operator would watch, and then, with cfg.serve, serves them until the
// program is interrupted.
func serveMetrics(w io.Writer, f *scaling.Filter, cfg config) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(f))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", cfg.metrics)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/metrics"
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "metrics at %s:\n", url)
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range []string{"dablooms_items{", "dablooms_filters{", "dablooms_condition{condition=\"clean\"", "dablooms_writers{"} {
			if strings.HasPrefix(line, name) {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
	}
	if cfg.serve {
		fmt.Fprintln(w, "serving them until interrupted")
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		<-stop
	}
	return nil
}

// zeroDirty overwrites the counters of the filters marked dirty with zeros:
// the pages an OS crash lost.
// markEarlierBoot writes earlierBoot's identity where the file keeps the
// boot identity recorded with its dirty mark (header.BootIDOffset,
// docs/FORMAT.md, "boot id"). This is what a restart looks like to the
// file: the mark was made on a boot that is not the machine's current one,
// so the page cache that held the unflushed changes may be gone. Open and
// recover compare it with the machine's boot identity and find it dirty.
func markEarlierBoot(path string) error {
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer fh.Close()
	boot := header.ParseBootID(earlierBoot)
	if _, err := fh.WriteAt(boot[:], header.BootIDOffset); err != nil {
		return err
	}
	return fh.Sync()
}

func zeroDirty(path string, filters []scaling.FilterStats) error {
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer fh.Close()
	for _, fs := range filters {
		if !fs.Dirty {
			continue
		}
		if _, err := fh.WriteAt(make([]byte, fs.Bytes), fs.Offset); err != nil {
			return err
		}
	}
	return fh.Sync()
}
