// Command dabloomsctl creates, fills, queries, inspects, verifies, repairs
// and backs up dablooms files: memory-mapped, persistent, scaling counting
// Bloom filters that several processes can share (package scaling), with
// the deep check and repair of package recover.
//
// Usage:
//
//	dabloomsctl create FILE --capacity N --error-rate P [--growth G] [--tightening R] [--seed S] [--layout L] [--force]
//	dabloomsctl add FILE [KEY...] [--id N] [--from PATH|-] [--exclusive] [--checkpoint N] [--skip N] [--flush-every N] [--no-flush]
//	dabloomsctl remove FILE [KEY...] --id N [--from PATH|-] [--exclusive] [--checkpoint N] [--skip N] [--flush-every N] [--no-flush]
//	dabloomsctl contains FILE [KEY...] [--from PATH|-] [--exit-code]
//	dabloomsctl inspect FILE
//	dabloomsctl verify FILE
//	dabloomsctl repair FILE [--output NEW | --backup PATH | --no-backup] [--rebuild-from PATH] [--dry-run] [--wait D]
//	dabloomsctl flush FILE
//	dabloomsctl retire FILE --before ID [--no-flush]
//	dabloomsctl compact FILE --from KEYS|- [--capacity N] [--headroom F] [--wait D]
//	dabloomsctl backup FILE DEST [--wait D] [--force]
//	dabloomsctl bench [--keys N] [--capacity N] [--error-rate P] [--dir DIR]
//	dabloomsctl import-dablooms OLD NEW --capacity C --error-rate P [--counting] [--force]
//
// Global flags: --json (one JSON document on stdout), -q/--quiet (no
// summary, no progress bar), --progress auto|always|never, --lock-timeout D
// (the longest the whole command waits for locks). Shell completion:
// "dabloomsctl completion bash|zsh|fish|powershell".
// docs/CLI.md in the repository describes every command; "dabloomsctl
// COMMAND --help" does too.
//
// # Input
//
// --from reads a file, or stdin for "-": one key per line, "KEY" or
// "KEY<TAB>ID" (the id after the last tab, a decimal from 0 to 2^63-1). A
// UTF-8 byte-order mark at the start is dropped; a trailing CR is dropped,
// and a CR elsewhere in a line (CR-only line ends) is an input error; empty
// lines, and lines of only spaces and tabs or whose key is only spaces and
// tabs (with a warning), are skipped; a line is at most 16 MiB. A line
// that cannot be processed stops the command with a message starting
// FILE:LINE: (stdin is <stdin>). A line without an id gets --id (add:
// default 0; remove has no default and needs --id for keys without one).
// Command-line keys are processed first, then the lines; --skip N passes
// over the first N of them (resuming after "checkpoint N"). add and remove
// apply them in batches (AddBatch, RemoveBatch), reading the next batch
// while one is applied (unless --checkpoint or --flush-every); with
// --exclusive the command holds the file as its only writer while it runs
// (scaling.OpenOptions.Exclusive): faster, and other writers wait for it.
//
// # Output
//
// Results go to stdout, logs, warnings and progress bars to stderr. A
// progress bar is drawn for bulk input only when stderr is a terminal (or
// with --progress always), never with --quiet or --json. With
// --checkpoint N, add and remove write "checkpoint N" to stderr after every
// N keys (even with --quiet): the first N keys of the input are then done.
// The progress bar counts keys and keys/s; add and remove end with a summary
// giving the time taken and the rate.
//
// # Exit codes
//
//	0  success; verify, inspect and repair: the file is clean or unflushed
//	1  operational error: I/O, lock timeout, no free writer slot, not a
//	   dablooms file or an unknown format version, interrupted by a signal,
//	   a key to remove was not present or ambiguous, the file must be
//	   repaired before it can be written; contains --exit-code: a key is
//	   absent (and nothing on stderr)
//	2  usage error: unknown command or flag, wrong arguments, bad value;
//	   contains --exit-code: any error (grep's convention)
//	3  verify or inspect found the file interrupted, dirty, damaged or
//	   corrupt (a dablooms file cut short included), or repair could not
//	   make it clean
//
// # JSON schema
//
// With --json, stdout carries exactly one JSON document (pretty-printed)
// when the command gets as far as producing a result; on a usage error or
// an operational error before that, stdout is empty and the error is on
// stderr. Every document has a "schema" field "dabloomsctl.COMMAND/v1".
// Fields are only ever added within a version; a change of meaning or type
// gets a new version. uint64 values that may exceed 2^53 (seed, hashes, bit
// masks) are hex strings ("0x2a"); counts, seqnums, ids and sizes are JSON
// numbers. Arrays are never null: an empty array is [].
//
// params (in create, inspect, verify, repair):
//
//	capacity          number   items of the first filter
//	error_rate        number   false-positive bound of the chain
//	growth_factor     number   capacity multiplier per new filter
//	tightening_ratio  number   error-target multiplier per new filter
//	seed              string   hash seed, hex
//	hash              string   "xxh64" or "murmur3-dablooms"
//	layout            string   "blocked1024", "blocked512" or "classic"
//
// dabloomsctl.create/v1:
//
//	schema, path, file_size, params, filters (1), k, counters (of the first filter)
//
// dabloomsctl.add/v1 and dabloomsctl.remove/v1 (written also when the
// command stops early: interrupted, or an error after the file was opened):
//
//	path         string
//	op           string   "add" or "remove"
//	processed    number   keys whose operation returned (input order)
//	changed      number   keys added, or removed
//	not_present  number   remove only: keys in no filter for their id
//	ambiguous    number   remove only: keys in several filters for their id
//	interrupted  bool     stopped by SIGINT/SIGTERM
//	flushed      bool     the final flush succeeded
//	mem_seqnum   number   after the command
//	disk_seqnum  number   after the command (0: not clean)
//	items        number   items in the file
//	filters      number   filters in the chain
//	skipped      number   keys at the start of the input passed over by --skip
//	seconds      number   the command's wall time
//
// dabloomsctl.contains/v1:
//
//	path, condition (clean, unflushed, interrupted, dirty),
//	results: [{key: string, present: bool}] in input order,
//	present: number, absent: number
//
// dabloomsctl.verify/v1 (a report; also the "report" of repair):
//
//	path          string
//	state         string   clean, unflushed, interrupted, dirty, damaged, corrupt
//	exit_code     number   the exit code this report gives (0, 1 or 3)
//	mem_seqnum    number   0 while an operation is in flight or was cut
//	disk_seqnum   number   0 unless the phase is clean
//	phase         string   clean, marking, dirty, flushing ("" if unreadable)
//	epoch         number
//	boot_matches  bool     the dirty mark was recorded on this boot
//	file_size     number
//	params        object   see above
//	findings      [{state, filter, slot, offset, field, message}]
//	              filter, slot and offset are -1 when they do not apply
//	filters       [{index, first_id, last_id, capacity, items, k, counters,
//	                counter_sum, saturated, dirty, offset, length}]
//	              first_id and last_id are null while the filter is empty
//	slots         [{slot, status, live, pid, completed, in_flight}]
//	              status: "live", "dead" (ended without closing) or "closed";
//	              in_flight: [{record, op, filter, hash, changed, doubt}],
//	              hash, changed and doubt hex strings
//	needs_rebuild [number]  filters whose counters need --rebuild-from
//	actions       [string]  what repair did (or would do)
//
// dabloomsctl.inspect/v1:
//
//	path, format {major, minor, generation, copy ("A" or "B")} or null,
//	created (RFC 3339, "" if unknown), file_size, params (null if the file
//	cannot be opened), condition (clean, unflushed, interrupted, dirty, or
//	"unknown" if it cannot be opened), state (of the deep check), exit_code,
//	mem_seqnum, disk_seqnum, phase, epoch, seqnum_meaning (a sentence),
//	items, retired (filters retired since creation; absent if none),
//	filter_limit (the most filters the chain can reach), filters_left
//	(filter_limit minus the chain's filters: 0 = full once the newest
//	filter is), estimated_fpr, live_slots, dead_slots, closed_slots, interrupted_ops,
//	slots (as in verify), findings (as in verify), and filters: [{index
//	(position in the chain), entry (directory entry; absent unless it
//	differs from index), first_id, last_id, capacity, items, fill,
//	error_target, estimated_fpr, k, counters, bytes, offset, layout, hash,
//	saturated (null if unknown), dirty}]
//
// dabloomsctl.repair/v1:
//
//	path, output ("" in place), backup ("" if no backup was written:
//	--output, --dry-run, --no-backup, nothing to repair, or an error),
//	rebuild_from,
//	dry_run, keys (re-added from --rebuild-from; 0 with error), error (""
//	unless repair gave up and wrote nothing; exit_code is then 1), state,
//	exit_code, report (a verify/v1 report
//	without "schema", of the file written, or of the file as it is when
//	error is set)
//
// dabloomsctl.flush/v1:
//
//	path, condition, mem_seqnum, disk_seqnum
//
// dabloomsctl.retire/v1 (written also when the retirement succeeded and
// the flush or close after it failed):
//
//	path           string
//	before         number   --before
//	retired        number   filters this command retired (0: none qualified)
//	retired_total  number   filters retired since the file was created
//	filters        number   filters left in the chain (at least 1)
//	first_filter   number   number (since creation) of the oldest one left
//	first_id       number   smallest id the remaining filters hold (null if empty)
//	last_id        number   largest id they hold (null if empty)
//	items          number   items in the remaining filters
//	file_size      number   bytes (a file never shrinks; retired blocks are holes)
//	flushed        bool     the final flush succeeded
//	condition      string   clean, unflushed
//	mem_seqnum     number   after the command
//	disk_seqnum    number   after the command (0: not clean)
//
// dabloomsctl.compact/v1 (written also when compact gave up: error and
// exit_code then say why, and FILE is as it was):
//
//	path            string
//	from            string   --from
//	filters_before  number   filters in the chain before
//	filters_after   number   filters after (1 unless --capacity was too small)
//	counted         number   keys of --from in the id range (0 with --capacity)
//	keys            number   keys added to the compacted file
//	capacity        number   capacity of the compacted filter
//	first_id        number   smallest id of the keys added (null if none)
//	last_id         number   largest id of the keys added (null if none)
//	size_before     number   bytes before
//	size_after      number   bytes after
//	seconds         number   time taken
//	error           string   "" unless compact gave up
//	exit_code       number   the command's exit code
//
// dabloomsctl.backup/v1:
//
//	path, dest, bytes, mem_seqnum, disk_seqnum, epoch, attempts,
//	held_seconds
//
// dabloomsctl.restore/v1:
//
//	backup, path, bytes, replaced
//
// dabloomsctl.bench/v1:
//
//	keys, capacity, error_rate, file_size, filters, false_positives,
//	false_negatives, measured_fpr, estimated_fpr, flush_ms,
//	results: [{name, ops, ns_per_op}] for "add", "contains (hit)",
//	"contains (miss)", "remove"
//
// dabloomsctl.import/v1:
//
//	old, new, kind, filters, max_id, mem_seqnum, disk_seqnum,
//	original_state, condition, file_size
package main
