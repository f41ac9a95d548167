package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cheggaaa/pb/v3"
	"github.com/cheggaaa/pb/v3/termutil"
	"github.com/dablooms/dablooms/scaling"
	"github.com/mattn/go-isatty"
)

// openRW opens a file for writing; it refuses an interrupted or dirty file.
func (a *app) openRW(path string) (*scaling.Filter, error) {
	f, err := scaling.Open(path, withBootID(&scaling.OpenOptions{LockTimeout: a.lockWait()}, a.bootID))
	return f, explain(path, err)
}

// openRO opens a file read-only, whatever its condition: it takes no writer
// slot and never writes.
func (a *app) openRO(path string) (*scaling.Filter, error) {
	f, err := scaling.Open(path, withBootID(&scaling.OpenOptions{ReadOnly: true, AllowUnclean: true, LockTimeout: a.lockWait()}, a.bootID))
	return f, explain(path, err)
}

// writeJSON writes v as the one JSON document of the command's stdout.
func (a *app) writeJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// wantProgress says whether bulk work draws a progress bar on stderr.
func (a *app) wantProgress() bool {
	if a.quiet || a.json {
		return false
	}
	switch a.progress {
	case "always":
		return true
	case "never":
		return false
	}
	return isTerminal(a.stderr)
}

// newBar starts a progress bar on stderr: it shows the keys done and keys
// per second, and, over the input's total bytes (0: unknown, as for
// stdin), how much of it was read and the time left. It returns nil when
// no bar is wanted.
func (a *app) newBar(prefix string, total int64) *pb.ProgressBar {
	if !a.wantProgress() {
		return nil
	}
	tmpl := `{{string . "prefix"}} {{string . "keys"}} {{bar . "[" "=" ">" " " "]"}} {{percent . }} {{rtime . "ETA %s"}}`
	if total <= 0 {
		tmpl = `{{string . "prefix"}} {{string . "keys"}} {{etime . }}`
	}
	if w, err := terminalWidth(); err == nil && w < minBarWidth {
		// A terminal of (almost) no columns, where a bar redrawn in place
		// would print only "\r": a line every few seconds instead.
		tmpl = `{{string . "prefix"}}: {{string . "keys"}}, {{percent . }} read`
		if total <= 0 {
			tmpl = `{{string . "prefix"}}: {{string . "keys"}}, {{etime . }}`
		}
		bar := pb.New64(total).SetTemplateString(tmpl).SetWriter(lineWriter{a.stderr}).SetWidth(1<<10).
			SetRefreshRate(progressLineEvery).Set("prefix", prefix).Set("keys", "0 keys")
		return bar.Start()
	}
	// A bar is drawn only on a terminal (or with --progress always): redraw
	// in place and end with a newline.
	bar := pb.New64(total).SetTemplateString(tmpl).SetWriter(a.stderr).
		Set("prefix", prefix).Set("keys", "0 keys").Set(pb.Terminal, true).Set(pb.ReturnSymbol, "\r")
	return bar.Start()
}

// terminalWidth is the width of the terminal the progress bar sizes
// itself to (pb's own measure); a variable for tests.
var terminalWidth = termutil.TerminalWidth

// minBarWidth is the fewest columns a progress bar is drawn in; on a
// narrower terminal (0 columns: a terminal whose size was never set)
// progress is a line every progressLineEvery.
const (
	minBarWidth       = 20
	progressLineEvery = 5 * time.Second
)

// lineWriter ends each write (one progress line) with a newline.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	if _, err := l.w.Write(append(p[:len(p):len(p)], '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

// barKeys shows n keys and their rate since start on bar.
func barKeys(bar *pb.ProgressBar, n int, start time.Time) {
	rate := float64(n) / max(time.Since(start).Seconds(), 1e-9)
	bar.Set("keys", fmt.Sprintf("%d keys, %s keys/s", n, fmtCount(rate)))
}

// fmtSeconds formats a duration in seconds: 0.042s, 1.23s, 95.1s.
func fmtSeconds(s float64) string {
	if s < 1 {
		return strconv.FormatFloat(s, 'f', 3, 64) + "s"
	}
	return strconv.FormatFloat(s, 'g', 3, 64) + "s"
}

// fmtCount formats a rate of keys: 950, 12.3k, 4.56M.
func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// item is one key of the input, with the id its line gave.
type item struct {
	key   []byte
	id    uint64
	hasID bool
	line  int // 1-based line number in --from, 0 for a command-line key
}

// inputError is a malformed input line; it is an operational error.
type inputError struct {
	name string
	line int
	msg  string
}

func (e *inputError) Error() string { return fmt.Sprintf("%s:%d: %s", e.name, e.line, e.msg) }

// parseLine splits "KEY" or "KEY<TAB>ID" (an optional trailing CR is dropped).
func parseLine(b []byte) (key []byte, id uint64, hasID bool, err error) {
	b = dropCR(b)
	// The common line, KEY<TAB>ID with an id of 1 to 19 digits (no
	// overflow), is parsed from its end in one pass.
	var n, pow uint64 = 0, 1
	for j := len(b) - 1; j >= 0 && j >= len(b)-20; j-- {
		d := uint64(b[j] - '0')
		if d <= 9 {
			n += d * pow
			pow *= 10
			continue
		}
		if b[j] == '\t' && j < len(b)-1 {
			return b[:j], n, true, nil
		}
		break
	}
	i := bytes.LastIndexByte(b, '\t')
	if i < 0 {
		return b, 0, false, nil
	}
	id, ok := parseDecimal(b[i+1:])
	if !ok {
		return nil, 0, false, fmt.Errorf("bad id %q after the tab (want KEY or KEY<TAB>ID with ID a decimal from 0 to 2^63-1)", b[i+1:])
	}
	return b[:i], id, true, nil
}

// dropCR drops one trailing CR, as bufio.ScanLines does.
func dropCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// parseDecimal parses what strconv.ParseUint(s, 10, 64) accepts: one or
// more ASCII digits (no sign, no underscore, leading zeros allowed) whose
// value fits in a uint64. Unlike ParseUint it needs no string, and no error
// is built for each line.
func parseDecimal(s []byte) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var n uint64
	for i, c := range s {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false
		}
		if i < 19 { // 19 digits are below 10^19 < 2^64: no overflow
			n = n*10 + d
			continue
		}
		hi, lo := bits.Mul64(n, 10)
		lo, carry := bits.Add64(lo, d, 0)
		if hi != 0 || carry != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// checkInput fails early, before the filter is opened, if --from names a
// file of keys that cannot be read, and says why in words, naming it once.
// A named pipe (a shell's <(...)) is not opened here: its writer would
// see the reader go.
func checkInput(from string) error {
	if from == "" || from == "-" {
		return nil
	}
	st, err := os.Stat(from)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &userError{msg: fmt.Sprintf("the file of keys %s does not exist", from), err: err}
	case errors.Is(err, fs.ErrPermission):
		return &userError{msg: fmt.Sprintf("the file of keys %s cannot be read: permission denied (on it or its directory)", from)}
	case err != nil:
		return err
	case st.IsDir():
		return &userError{msg: fmt.Sprintf("the file of keys %s is a directory", from)}
	case !st.Mode().IsRegular():
		return nil
	}
	fh, err := os.Open(from)
	if errors.Is(err, fs.ErrPermission) {
		return &userError{msg: fmt.Sprintf("the file of keys %s cannot be read: permission denied", from)}
	}
	if err != nil {
		return err
	}
	return fh.Close()
}

// forEachItem calls fn for each key given on the command line and then for
// each line of --from (a path, or "-" for stdin). Empty lines are skipped.
// It stops between two items when ctx is cancelled (Ctrl-C) and returns
// ctx's error, after fn has returned for every item it was given. The key
// slice is valid only during the call.
func (a *app) forEachItem(ctx context.Context, verb string, keys []string, from string, fn func(it item) error) error {
	done := ctx.Done()
	for _, k := range keys {
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		if err := fn(item{key: []byte(k)}); err != nil {
			return err
		}
	}
	if from == "" {
		return nil
	}
	if from == "-" {
		return a.scanLines(ctx, a.stdin, inputName(from), verb, 0, fn)
	}
	return a.scanFile(ctx, from, verb, fn)
}

// inputName is how messages name the input --from: its path, or <stdin>
// for "-" (docs/CLI.md, Input).
func inputName(from string) string {
	if from == "-" {
		return "<stdin>"
	}
	return from
}

// scanFile is scanLines over the file at path, with the progress bar over
// its size when it is a regular file.
func (a *app) scanFile(ctx context.Context, path, label string, fn func(it item) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var total int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		total = st.Size()
	}
	return a.scanLines(ctx, f, path, label, total, fn)
}

// scanRange calls add with the key and id of every KEY<TAB>ID line of the
// file at path ("-": stdin, which only one pass can read) whose id is in
// [first, last] (a recover.Source's pass); a line with no id is an input
// error, which names flag.
func (a *app) scanRange(ctx context.Context, path, label, flag string, first, last uint64, add func(key []byte, id uint64) error) error {
	fn := func(it item) error {
		if !it.hasID {
			return &inputError{name: inputName(path), line: it.line, msg: "no id: " + flag + " needs KEY<TAB>ID lines"}
		}
		if it.id < first || it.id > last {
			return nil
		}
		return add(it.key, it.id)
	}
	if path == "-" { // read once: the caller makes sure
		return a.scanLines(ctx, a.stdin, inputName(path), label, 0, fn)
	}
	return a.scanFile(ctx, path, label, fn)
}

// scanLines calls fn with every KEY or KEY<TAB>ID line of r, as an item
// (named name in errors), with a progress bar labelled label over total
// bytes (when bars are on). It stops between two lines when ctx is
// cancelled and returns ctx's error. The key slice is valid only during
// the call.
//
// The input rules (docs/CLI.md, Conventions): a UTF-8 byte-order mark at
// the start is dropped; a line ends at LF, and one CR before it is
// dropped; a CR anywhere else in a line is an input error (the input has
// CR-only line ends, which would make it one key); empty lines are
// skipped, and so are lines whose key holds only spaces and tabs (a line of
// only spaces and tabs among them, whatever follows its last tab), with a
// warning (they are taken for mistakes, not keys); a line is at most
// maxLine bytes.
func (a *app) scanLines(ctx context.Context, r io.Reader, name, label string, total int64, fn func(it item) error) error {
	bar := a.newBar(label, total)
	start := time.Now()
	keys := 0
	if bar != nil {
		defer func() {
			barKeys(bar, keys, start)
			bar.Finish()
		}()
	}
	lr := newLineReader(r, 64<<10, maxLine)
	line, blank, firstBlank := 0, 0, 0
	defer func() {
		if blank > 0 {
			a.warnf("%s: skipped %d line(s) whose key is only spaces or tabs (the first is line %d): such lines are not keys", name, blank, firstBlank)
		}
	}()
	for {
		b, ok := lr.next()
		if !ok {
			break
		}
		line++
		if bar != nil {
			bar.Add64(int64(len(b) + 1))
			if line&4095 == 0 {
				barKeys(bar, keys, start)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if len(b) == 0 || (len(b) == 1 && b[0] == '\r') {
			continue
		}
		if isBlank(b) { // a blank key, and no id after the last tab
			if blank++; blank == 1 {
				firstBlank = line
			}
			continue
		}
		key, id, hasID, err := parseLine(b)
		if err != nil {
			return &inputError{name: name, line: line, msg: err.Error()}
		}
		if bytes.IndexByte(b, '\r') >= 0 {
			return &inputError{name: name, line: line, msg: crMessage}
		}
		if isBlank(key) {
			if blank++; blank == 1 {
				firstBlank = line
			}
			continue
		}
		keys++
		if err := fn(item{key: key, id: id, hasID: hasID, line: line}); err != nil {
			return err
		}
	}
	if err := lr.err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			msg := fmt.Sprintf("line longer than %d MiB, the longest a line can be", maxLine>>20)
			if lr.sawCR {
				msg += "; " + crMessage
			}
			return &inputError{name: name, line: line + 1, msg: msg}
		}
		return fmt.Errorf("reading %s after line %d: %w", name, line, err)
	}
	return nil
}

var utf8BOM = []byte("\xef\xbb\xbf")

const crMessage = `a carriage return (CR) inside the line: the input seems to end its lines with CR alone, which is not a line end here; convert it first (tr '\r' '\n')`

// isBlank says whether key holds only spaces and tabs (or nothing).
func isBlank(key []byte) bool {
	for _, c := range key {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// maxLine is the longest line of input, its newline included: the limit
// bufio.Scanner had here (a longer line fails with bufio.ErrTooLong).
const maxLine = 16 << 20

// lineReader splits its reader into lines exactly as a bufio.Scanner with
// ScanLines and a buffer of at most max bytes would: a line ends at '\n',
// one CR before it is dropped, the last line needs no newline, a line
// that does not fit in max bytes fails with bufio.ErrTooLong, and the
// lines read before a read error are returned before the error. It avoids
// the Scanner's split-function call per line, and reads into the whole
// free part of its buffer.
type lineReader struct {
	r          io.Reader
	buf        []byte
	start, end int // the unread bytes are buf[start:end]
	scanned    int // buf[start:scanned] holds no '\n'
	max        int
	rerr       error // the reader's error (io.EOF at the end); sticky
	sawCR      bool  // the line too long held a CR
}

func newLineReader(r io.Reader, size, max int) *lineReader {
	return &lineReader{r: r, buf: make([]byte, min(size, max)), max: max}
}

// next returns the next line, valid until the following call; false at
// the end of the input or after an error (see err).
func (l *lineReader) next() ([]byte, bool) {
	for {
		if i := bytes.IndexByte(l.buf[l.scanned:l.end], '\n'); i >= 0 {
			i += l.scanned
			b := l.buf[l.start:i]
			l.start, l.scanned = i+1, i+1
			return dropCR(b), true
		}
		l.scanned = l.end
		if l.rerr != nil {
			if l.start == l.end {
				return nil, false
			}
			b := l.buf[l.start:l.end]
			l.start = l.end
			return dropCR(b), true
		}
		l.fill()
	}
}

// fill reads once more into the buffer, after moving the unread bytes to
// its start or growing it (up to max) when it is full.
func (l *lineReader) fill() {
	if l.start > 0 {
		n := copy(l.buf, l.buf[l.start:l.end])
		l.scanned -= l.start
		l.start, l.end = 0, n
	}
	if l.end == len(l.buf) {
		if len(l.buf) >= l.max {
			// The partial line is dropped, not returned as the last line.
			l.sawCR = bytes.IndexByte(l.buf[:l.end], '\r') >= 0
			l.rerr = bufio.ErrTooLong
			l.start, l.end, l.scanned = 0, 0, 0
			return
		}
		nb := make([]byte, min(2*len(l.buf), l.max))
		copy(nb, l.buf[:l.end])
		l.buf = nb
	}
	for empty := 0; ; {
		n, err := l.r.Read(l.buf[l.end:])
		if n < 0 || len(l.buf)-l.end < n {
			l.rerr = bufio.ErrBadReadCount
			return
		}
		l.end += n
		if err != nil {
			l.rerr = err
			return
		}
		if n > 0 {
			return
		}
		if empty++; empty > 100 {
			l.rerr = io.ErrNoProgress
			return
		}
	}
}

// err is the error that ended the input, nil at its end.
func (l *lineReader) err() error {
	if l.rerr == io.EOF {
		return nil
	}
	return l.rerr
}

// fillBar draws fill (0..1, may exceed 1) as a bar of width cells.
func fillBar(fill float64, width int, fancy bool) string {
	if math.IsNaN(fill) || fill < 0 {
		fill = 0
	}
	f := min(fill, 1)
	full, empty := "#", "."
	if fancy {
		full, empty = "█", "░"
	}
	n := int(math.Round(f * float64(width)))
	if n == 0 && fill > 0 {
		n = 1
	}
	return "[" + strings.Repeat(full, n) + strings.Repeat(empty, width-n) + "]"
}

// idRange formats the id range of a filter that is not empty.
func idRange(first, last uint64) string {
	if first == last {
		return strconv.FormatUint(first, 10)
	}
	return strconv.FormatUint(first, 10) + ".." + strconv.FormatUint(last, 10)
}

// jsonIDs are a filter's id range bounds for JSON: null while the filter is
// empty (its range is then MaxUint64..0).
func jsonIDs(first, last uint64) (*uint64, *uint64) {
	if first == math.MaxUint64 || first > last {
		return nil, nil
	}
	return &first, &last
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// fmtRate formats a probability compactly and stably (for goldens).
func fmtRate(p float64) string {
	switch {
	case p == 0:
		return "0"
	case p >= 0.001:
		return strconv.FormatFloat(p, 'f', 4, 64)
	}
	return strconv.FormatFloat(p, 'e', 2, 64)
}
