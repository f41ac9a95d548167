package scaling

// instrAdd and instrRemove are BenchmarkCachedAddRemove's calls, whose
// inclusive instruction counts bench/instructions.sh reads from callgrind
// (it runs the benchmark at two lengths and divides the difference of
// each function's count by the difference of the lengths): kept out of
// line so that each has a symbol of its own, whatever the compiler
// inlines below them.
//
//go:noinline
func instrAdd(f *Filter, key []byte, id uint64) error { return f.Add(key, id) }

//go:noinline
func instrRemove(f *Filter, key []byte, id uint64) error { return f.Remove(key, id) }
