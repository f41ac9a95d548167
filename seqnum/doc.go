// Package seqnum implements the sequence-number and dirty-mark protocol of a
// dablooms file over words the caller provides (mapped or heap). It knows
// nothing of files: making a mark durable is a callback.
//
// # The numbers
//
// mem_seqnum is the number of completed modifications (Add or Remove). Each
// writer handle counts its own in its own cache line (its writer slot), so
// writers never contend on one line; mem_seqnum is their sum, and reads 0
// while any modification is in progress or one was interrupted.
//
// disk_seqnum is the mem_seqnum at the last completed durable flush, and 0
// once anything has changed since.
//
// # The state word
//
// One 64-bit word holds a phase in bits 0-1 and an epoch in bits 2-63:
//
//	Clean    the file equals the last durable flush; disk_seqnum is valid
//	Marking  a writer is making the dirty mark durable; writers wait
//	Dirty    writers may change filters whose mark equals the epoch
//	Flushing a flush has frozen writers and is syncing
//
// Dirty-first rule (I1, docs/PROTOCOLS.md): a writer that finds the phase
// Clean or Flushing moves it to Marking, records the mark, calls sync, and
// only then moves it to Dirty and changes counters. Per filter, a filter
// whose mark is not the current epoch is marked (and synced) before its
// first change in that epoch; a completed flush increments the epoch, which
// unmarks every filter at once.
//
// Flush (I3): Dirty → Flushing (this freezes writers: a writer that sees
// Flushing goes back to Marking, which makes the flush fail to claim clean);
// the caller checks that no operation is in flight, syncs everything, stores
// disk_seqnum and moves Flushing → Clean with epoch+1, then syncs the state
// word.
//
// Stability: this package is low-level, the seqnum protocol's state word
// for scaling and recover. Its API may change between releases (the words'
// meaning in a file is fixed by docs/FORMAT.md and docs/PROTOCOLS.md), and
// CHANGELOG.md lists such changes; programs should use scaling.
package seqnum
