package header

import (
	"encoding/binary"
	"unsafe"
)

// RebuildBootID is the boot identity Repair records with the dirty mark
// when it leaves filters it could not make exact (they need Rebuild): no
// machine has it, so the file reads dirty everywhere, and nobody may take
// it for a restart.
var RebuildBootID = [16]byte{'r', 'e', 'p', 'a', 'i', 'r', ':', 'r', 'e', 'b', 'u', 'i', 'l', 'd', 0xff, 0xff}

// ParseBootID turns a boot identity into the 16 bytes recorded with the
// dirty mark (BootIDOffset): a string of at most 16 bytes is kept as it is; a longer one (a
// UUID such as /proc/sys/kernel/random/boot_id) gives the bytes of its hex
// digit pairs.
func ParseBootID(s string) [16]byte {
	var id [16]byte
	copy(id[:], s)
	if len(s) > 16 {
		var b [16]byte
		n := 0
		for i := 0; i+1 < len(s) && n < 16; i++ {
			if hexv(s[i]) >= 0 && hexv(s[i+1]) >= 0 {
				b[n] = byte(hexv(s[i])<<4 | hexv(s[i+1]))
				n++
				i++
			}
		}
		id = b
	}
	return id
}

func hexv(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// The boot identity's 16 bytes are the two words of Hot.BootID, which fill
// the format's field (same: see view.go).
func _() {
	var same [1]struct{}
	var h Hot
	_ = same[unsafe.Sizeof(h.BootID)-unsafe.Sizeof(RebuildBootID)]
	_ = same[unsafe.Sizeof(h.BootID)-(DirtySinceOffset-BootIDOffset)]
}

// BootIDWords returns the boot identity id as the two words of Hot.BootID:
// its bytes 0-7 and 8-15, each little-endian. The first is also the word a
// clean flush records as Hot.CleanBootID.
func BootIDWords(id [16]byte) [2]uint64 {
	return [2]uint64{binary.LittleEndian.Uint64(id[:8]), binary.LittleEndian.Uint64(id[8:])}
}

// BootIDFromWords returns the boot identity whose words (Hot.BootID) are w:
// the inverse of BootIDWords.
func BootIDFromWords(w [2]uint64) [16]byte {
	var id [16]byte
	binary.LittleEndian.PutUint64(id[:8], w[0])
	binary.LittleEndian.PutUint64(id[8:], w[1])
	return id
}
