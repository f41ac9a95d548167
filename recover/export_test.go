package recover

// The helpers of the white-box tests that the external tests (package
// recover_test: smoke_test.go, growth_test.go, context_test.go,
// failpoint_test.go, diskfull_linux_test.go, writers_kill_test.go)
// share.
const TestBoot = testBoot

var (
	Key             = key
	NewFile         = newFile
	KeysSource      = keysSource
	VerifyT         = verifyT
	DumpReport      = dumpReport
	Sum256          = sum256
	InterruptedFile = interruptedFile
	Canceled        = canceled
	EnvInt          = envInt
)

// Booted is booted.
func Booted[T any](o *T, boot string) *T { return booted(o, boot) }
