package recover

import "os"

// bootID is a machine boot identity as scaling records it with the dirty
// mark: the 16 bytes of the UUID's hex digits, or the raw bytes of a short
// override string.
type bootID [16]byte

// rebuildBoot is the boot identity Repair records when it leaves filters that
// need Rebuild: no machine has it, so the file reads dirty everywhere.
var rebuildBoot = bootID{'r', 'e', 'p', 'a', 'i', 'r', ':', 'r', 'e', 'b', 'u', 'i', 'l', 'd', 0xff, 0xff}

// currentBoot returns the boot identity: the override if given, else
// /proc/sys/kernel/random/boot_id, parsed exactly as scaling does.
func currentBoot(override string) bootID {
	s := override
	if s == "" {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			s = "unknown-boot"
		} else {
			s = string(b)
		}
	}
	return parseBootID(s)
}

// parseBootID is scaling's setBootID: a string of at most 16 bytes is kept
// as it is; a longer one (a UUID) gives the bytes of its hex digit pairs.
func parseBootID(s string) bootID {
	var id bootID
	copy(id[:], s)
	if len(s) > 16 {
		var b bootID
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
