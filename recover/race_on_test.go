//go:build race

package recover

const raceEnabled = true
