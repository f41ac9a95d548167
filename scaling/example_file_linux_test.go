package scaling_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/dablooms/dablooms/scaling"
)

// A filter in a file: changes are counted by MemSeqnum; Flush makes them
// durable and records the count as DiskSeqnum, which the next change resets
// to 0. Reopening needs only the path: the parameters are in the file.
func ExampleCreate() {
	dir, err := os.MkdirTemp("", "dablooms-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "spam.dbl")

	f, err := scaling.Create(path, &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		log.Fatal(err)
	}
	for i, url := range []string{"http://a.example/", "http://b.example/", "http://c.example/"} {
		if err := f.AddString(url, uint64(i)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("before flush: mem", f.MemSeqnum(), "disk", f.DiskSeqnum(), f.Condition())
	if err := f.Flush(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after flush:  mem", f.MemSeqnum(), "disk", f.DiskSeqnum(), f.Condition())
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}

	g, err := scaling.Open(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	fmt.Println("reopened:     mem", g.MemSeqnum(), "disk", g.DiskSeqnum(), g.Condition())
	fmt.Println("contains b:", g.ContainsString("http://b.example/"))
	if err := g.RemoveString("http://b.example/", 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after remove: mem", g.MemSeqnum(), "disk", g.DiskSeqnum(), g.Condition())
	// Output:
	// before flush: mem 3 disk 0 unflushed
	// after flush:  mem 3 disk 3 clean
	// reopened:     mem 3 disk 3 clean
	// contains b: true
	// after remove: mem 4 disk 0 unflushed
}
