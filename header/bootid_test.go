package header

import (
	"encoding/binary"
	"testing"
)

// TestBootIDWords checks boot identities against the bytes at BootIDOffset
// when their words are put in the hot page, and the round trip.
func TestBootIDWords(t *testing.T) {
	for _, id := range [][16]byte{
		{},
		RebuildBootID,
		ParseBootID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"),
		ParseBootID("boot-a"),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1},
	} {
		head := make([]byte, DataOffset)
		var h Hot
		h.BootID = BootIDWords(id)
		PutHot(head, h)
		if got := [16]byte(head[BootIDOffset:]); got != id {
			t.Errorf("%x: the bytes at BootIDOffset are %x", id, got)
		}
		if got := BootIDFromWords(ReadHot(head).BootID); got != id {
			t.Errorf("%x: read back as %x", id, got)
		}
		if w := BootIDWords(id)[0]; w != binary.LittleEndian.Uint64(id[:8]) {
			t.Errorf("%x: first word %#x is not its first 8 bytes", id, w)
		}
	}
}
