package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"testing"
	"testing/iotest"
)

// benchLines is n KEY<TAB>ID lines as add --from reads them.
func benchLines(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "key-%d\t%d\n", i, i)
	}
	return b.Bytes()
}

// BenchmarkScanLines: reading, splitting and parsing 1M lines, per line.
func BenchmarkScanLines(b *testing.B) {
	in := benchLines(1 << 20)
	a := &app{quiet: true}
	// The context main passes.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var sum uint64
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		err := a.scanLines(ctx, bytes.NewReader(in), "in", "", 0, func(it item) error {
			sum += it.id + uint64(len(it.key))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(1<<20), "ns/line")
}

// BenchmarkParseLine: one KEY<TAB>ID line.
func BenchmarkParseLine(b *testing.B) {
	line := []byte("key-1234567\t1234567")
	var sum uint64
	for b.Loop() {
		key, id, _, err := parseLine(line)
		if err != nil {
			b.Fatal(err)
		}
		sum += id + uint64(len(key))
	}
}

// oldParseLine is parseLine as it was with strconv.ParseUint, the
// reference the hand-written parser must agree with.
func oldParseLine(b []byte) (key []byte, id uint64, hasID bool, err error) {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	i := bytes.LastIndexByte(b, '\t')
	if i < 0 {
		return b, 0, false, nil
	}
	id, err = strconv.ParseUint(string(b[i+1:]), 10, 64)
	if err != nil {
		return nil, 0, false, fmt.Errorf("bad id %q after the tab (want KEY or KEY<TAB>ID with ID a decimal from 0 to 2^63-1)", b[i+1:])
	}
	return b[:i], id, true, nil
}

func checkParseLine(t *testing.T, in string) {
	t.Helper()
	key, id, hasID, err := parseLine([]byte(in))
	wkey, wid, whasID, werr := oldParseLine([]byte(in))
	if string(key) != string(wkey) || (key == nil) != (wkey == nil) || id != wid || hasID != whasID || fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Errorf("parseLine(%q) = %q, %d, %v, %v; strconv says %q, %d, %v, %v", in, key, id, hasID, err, wkey, wid, whasID, werr)
	}
}

// TestParseLineLikeStrconv: the hand-written id parser accepts exactly
// what strconv.ParseUint(s, 10, 64) accepts, with the same value, and
// rejects the rest with the same message.
func TestParseLineLikeStrconv(t *testing.T) {
	for _, id := range []string{
		"", "0", "7", "007", "+1", "-1", " 1", "1 ", "1_000", "0x10", "1e3", "1.0", "١",
		"9223372036854775807", "9223372036854775808",
		"18446744073709551615", "18446744073709551616", "18446744073709551620",
		"18446744073709551625", "19000000000000000000", "99999999999999999999",
		"184467440737095516150", "000000000000000000000018446744073709551615",
		"0000000000000000000000018446744073709551616", "1844674407370955161x",
		"12\r", "12\r\r", "/", ":",
	} {
		checkParseLine(t, "key\t"+id)
		checkParseLine(t, "key\t"+id+"\r")
	}
	for _, in := range []string{"", "\r", "\r\r", "k", "k\r", "\t", "\t\t5", "a\tb\t9", "a\t5\tb", "k\t\r"} {
		checkParseLine(t, in)
	}
	for v := uint64(1); v != 0; v <<= 1 {
		for _, x := range []uint64{v - 1, v, v + 1, v*10 - 1} {
			checkParseLine(t, "k\t"+strconv.FormatUint(x, 10))
		}
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"k\t7", "k\t18446744073709551616\r", "a\tb\t9", "\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { checkParseLine(t, in) })
}

// scannerLines is what bufio.Scanner (ScanLines, a buffer of size growing
// to max) makes of r: the lines and the error.
func scannerLines(r io.Reader, size, max int) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, size), max)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

func readerLines(r io.Reader, size, max int) ([]string, error) {
	lr := newLineReader(r, size, max)
	var lines []string
	for {
		b, ok := lr.next()
		if !ok {
			break
		}
		lines = append(lines, string(b))
	}
	return lines, lr.err()
}

// TestLineReaderLikeScanner: lineReader splits any input into the lines
// bufio.Scanner gives, with the same error, whatever the reader does: one
// byte at a time, half of what is asked, data with EOF, an error after
// some data, lines longer than the limit, CRs anywhere.
func TestLineReaderLikeScanner(t *testing.T) {
	errBroken := errors.New("broken")
	readers := map[string]func([]byte) io.Reader{
		"plain":   func(b []byte) io.Reader { return bytes.NewReader(b) },
		"onebyte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half":    func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"dataerr": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"error": func(b []byte) io.Reader {
			return io.MultiReader(bytes.NewReader(b), iotest.ErrReader(errBroken))
		},
		"timeout": func(b []byte) io.Reader { return iotest.TimeoutReader(bytes.NewReader(b)) },
		"stuck": func(b []byte) io.Reader {
			return io.MultiReader(bytes.NewReader(b), stuckReader{})
		},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var inputs [][]byte
	for _, s := range []string{"", "\n", "\r\n", "a", "a\n", "a\r", "a\r\r\n", "\r\r\n\n", "abcdefghijklmnop", "abcdefghijklmno\n", "abcdefghijklmnopq\nb\n"} {
		inputs = append(inputs, []byte(s))
	}
	for range 3000 {
		b := make([]byte, rng.IntN(120))
		for i := range b {
			b[i] = "ab\r\n\n\n"[rng.IntN(6)]
			if rng.IntN(40) == 0 { // a long run without a newline
				for range rng.IntN(40) {
					b = append(b, 'x')
				}
			}
		}
		inputs = append(inputs, b)
	}
	n := 0
	for _, in := range inputs {
		for rname, mk := range readers {
			for _, sz := range [][2]int{{4, 16}, {16, 16}, {5, 64}, {1, 7}} {
				want, werr := scannerLines(mk(in), sz[0], sz[1])
				got, gerr := readerLines(mk(in), sz[0], sz[1])
				if !slices.Equal(got, want) || gerr != werr {
					t.Fatalf("%s reader, size %d max %d, input %q:\n got %q, %v\nwant %q, %v", rname, sz[0], sz[1], in, got, gerr, want, werr)
				}
				if werr == bufio.ErrTooLong {
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Error("no input was too long")
	}
}

// stuckReader reads nothing, forever, without an error.
type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

// BenchmarkForEachItem: add --from's reading of a file of 1M lines, with
// a callback that only sums, per line.
func BenchmarkForEachItem(b *testing.B) {
	path := b.TempDir() + "/lines.txt"
	if err := os.WriteFile(path, benchLines(1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	a := &app{quiet: true}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var sum uint64
	for b.Loop() {
		err := a.forEachItem(ctx, "add", nil, path, func(it item) error {
			sum += it.id + uint64(len(it.key))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(1<<20), "ns/line")
}
