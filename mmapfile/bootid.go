package mmapfile

// unknownBoot is the boot identity where the system gives none.
const unknownBoot = "unknown-boot"

// BootID returns the machine's boot identity as the kernel gives it (on
// Linux, /proc/sys/kernel/random/boot_id: a UUID and a newline), or
// "unknown-boot" where there is none (unreadable, or not Linux).
func BootID() string {
	id, err := bootID()
	if err != nil {
		return unknownBoot
	}
	return id
}
