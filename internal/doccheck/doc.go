// Package doccheck holds only tests: they check that docs/PROTOCOLS.md
// names tests, functions and words that exist in this module, so the list
// of invariants cannot drift from the code unnoticed.
package doccheck
