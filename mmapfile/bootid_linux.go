package mmapfile

import "os"

// bootID reads the kernel's boot identity, which changes at every boot.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return string(b), nil
}
