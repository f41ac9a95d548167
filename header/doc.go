// Package header defines the on-disk format of a dablooms file and nothing
// else: byte offsets, field widths, identifiers, and the encoding, decoding
// and validation of the metadata block. It knows nothing of files or
// mappings; it works on byte slices and words that the caller owns, and
// reads or writes single words through an io.ReaderAt or io.WriterAt the
// caller passes.
//
// Every file begins with two copies of a 4096-byte metadata block (page 0 and
// page 1). Each copy carries a CRC-32C checksum and a generation number; the
// valid copy with the higher generation wins, so a torn write of one copy
// never makes the file unopenable. Writers update the copies alternately and
// make each durable before touching the other.
//
// Words that change on every operation (the state word, item counts, writer
// slot counters and in-flight records) live outside the metadata copies, each
// group in its own 64-byte line, at the fixed offsets given by the constants
// of this package. The views Hot, Line, Slot and Record lay those words out
// as structs, over a writer's mapped words or copied from a file's bytes.
// docs/FORMAT.md in the repository documents every byte.
//
// All integers are little-endian. Parsing treats the bytes as hostile: every
// field is range-checked and every offset and length is checked against the
// file size with overflow-safe arithmetic before anything relies on it.
//
// Stability: this package is low-level. It is the file format's layout as
// Go constants and views, for scaling, recover and tools that read files
// byte by byte; its identifiers follow the format, so a new format version
// may add, rename or retype them between releases (CHANGELOG.md lists such
// changes). The format itself is stable: docs/FORMAT.md says what each
// version reads and writes. Programs should use scaling and recover.
package header
