//go:build !race

package counting4

const raceEnabled = false
