package recover_test

import (
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/recover"
)

func TestSmokeClean(t *testing.T) {
	path := recover.NewFile(t, 1000, counting4.Blocked512, 2500)
	before := recover.Sum256(t, path)
	r := recover.VerifyT(t, path)
	recover.DumpReport(t, r)
	if r.State != recover.Clean {
		t.Fatalf("state %v", r.State)
	}
	if len(r.Filters) < 2 {
		t.Fatalf("filters %d", len(r.Filters))
	}
	if recover.Sum256(t, path) != before {
		t.Fatal("verify changed the file")
	}
	rep, err := recover.Repair(path, recover.Booted(&recover.RepairOptions{}, recover.TestBoot))
	if err != nil || rep.State != recover.Clean || recover.Sum256(t, path) != before {
		t.Fatalf("Repair of a clean file: %v, %v, or it changed the file", err, rep)
	}
	recover.DumpReport(t, rep)
}
