package scaling_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/dablooms/dablooms/scaling"
)

// A filter in ordinary memory: add a key with the id of the row it stands
// for, ask for it, remove it with the same id.
func ExampleNewMemory() {
	f, err := scaling.NewMemory(&scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	if err := f.AddString("http://spam.example/", 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after add:", f.ContainsString("http://spam.example/"))

	if err := f.RemoveString("http://spam.example/", 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after remove:", f.ContainsString("http://spam.example/"))

	err = f.RemoveString("http://spam.example/", 1)
	fmt.Println("second remove is ErrNotPresent:", errors.Is(err, scaling.ErrNotPresent))
	fmt.Println("modifications:", f.MemSeqnum())
	// Output:
	// after add: true
	// after remove: false
	// second remove is ErrNotPresent: true
	// modifications: 2
}
