package legacy_test

import (
	"fmt"

	"github.com/dablooms/dablooms/legacy"
)

// The sizes of the first filters of a scaling file created with capacity 1000 and error rate
// 0.05, and where a key's counters are in the first one.
func ExampleLayout() {
	for i := 0; i < 3; i++ {
		l, err := legacy.Layout(1000, 0.05, i)
		if err != nil {
			panic(err)
		}
		fmt.Printf("filter %d at %d: k %d, %d counters per function, %d bytes\n", i, l.Offset, l.K, l.CountsPerFunc, l.Bytes)
	}
	l, _ := legacy.Layout(1000, 0.05, 0)
	h := legacy.Hash([]byte("key-1"))
	for j := 0; j < l.K; j++ {
		fmt.Print(legacy.Index(h, j, l.CountsPerFunc), " ")
	}
	fmt.Println()
	// Output:
	// filter 0 at 24: k 6, 1280 counters per function, 3856 bytes
	// filter 1 at 3880: k 7, 1303 counters per function, 4577 bytes
	// filter 2 at 8457: k 8, 1321 counters per function, 5300 bytes
	// 113 2322 2995 3924 5877 6806
}
