package legacy

import "testing"

func TestReadCountingTestdata(t *testing.T) {
	p := tempCopy(t, "counting_1000_0.05.bin")
	before := sha(t, p)
	c, err := ReadCounting(p, 1000, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if after := sha(t, p); after != before {
		t.Errorf("file changed by reading: sha256 %s, was %s", after, before)
	}
	if c.K != 5 || c.CountsPerFunc != 1248 || c.Bytes != 3136 || c.Count != 800 || c.StartID != 0 || c.Offset != 0 {
		t.Errorf("k %d cpf %d bytes %d count %d id %d offset %d; want 5 1248 3136 800 0 0", c.K, c.CountsPerFunc, c.Bytes, c.Count, c.StartID, c.Offset)
	}
	checkContains(t, c.Contains, func(i int) bool { return i < 1000 && i%5 != 0 }, 20000, 10)
}

func TestReadCountingRefuses(t *testing.T) {
	orig := mustRead(t, "counting_1000_0.05.bin")
	checkRefuses(t, ReadCounting, []refusal{
		{"wrong capacity", orig, 100, 0.05, ErrSizeMismatch, "file is 3136 bytes; capacity 100 at error 0.05 implies 329 bytes: not a dablooms 0.9.1 counting file"},
		{"truncated", orig[:3135], 1000, 0.05, ErrSizeMismatch, "file is 3135 bytes"},
		{"one byte more", append(orig[:len(orig):len(orig)], 0), 1000, 0.05, ErrSizeMismatch, "file is 3137 bytes"},
		{"empty", nil, 1000, 0.05, ErrSizeMismatch, "file is 0 bytes"},
		{"header only", orig[:16], 1000, 0.05, ErrSizeMismatch, "file is 16 bytes"},
		{"a scaling file", mustRead(t, "scaling_1000_0.05.bin"), 1000, 0.05, ErrSizeMismatch, "file is 13757 bytes"},
		{"capacity 0", orig, 0, 0.05, ErrBadParams, "capacity 0"},
		{"error rate 1", orig, 1000, 1, ErrBadParams, "error rate 1"},
	})
}
