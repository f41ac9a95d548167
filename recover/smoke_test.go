package recover

import (
	"testing"

	"github.com/dablooms/dablooms/counting4"
)

func TestSmokeClean(t *testing.T) {
	path := newFile(t, 1000, counting4.Blocked512, 2500)
	before := sum256(t, path)
	r := verifyT(t, path)
	dumpReport(t, r)
	if r.State != Clean {
		t.Fatalf("state %v", r.State)
	}
	if len(r.Filters) < 2 {
		t.Fatalf("filters %d", len(r.Filters))
	}
	if sum256(t, path) != before {
		t.Fatal("verify changed the file")
	}
	rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil || rep.State != Clean || sum256(t, path) != before {
		t.Fatalf("Repair of a clean file: %v, %v, or it changed the file", err, rep)
	}
	dumpReport(t, rep)
}
