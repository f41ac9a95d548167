package recover

import (
	"context"
	"errors"
	"testing"
)

// TestContextCanceled: VerifyContext, RepairContext, RebuildContext and
// CompactContext return the context's error and leave the file as it was,
// for a context canceled before the call and for one canceled while the
// Source adds keys (the control: the same calls with a live context
// succeed).
func TestContextCanceled(t *testing.T) {
	calls := map[string]func(ctx context.Context, path string, src Source) error{
		"verify": func(ctx context.Context, path string, _ Source) error {
			_, err := VerifyContext(ctx, path, booted(&VerifyOptions{}, testBoot))
			return err
		},
		"repair": func(ctx context.Context, path string, _ Source) error {
			_, err := RepairContext(ctx, path, booted(&RepairOptions{}, testBoot))
			return err
		},
		"rebuild": func(ctx context.Context, path string, src Source) error {
			_, err := RebuildContext(ctx, path, src, booted(&RepairOptions{}, "another-boot"))
			return err
		},
		"compact": func(ctx context.Context, path string, src Source) error {
			_, err := CompactContext(ctx, path, src, booted(&CompactOptions{}, testBoot))
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			path := interruptedFile(t)
			before := sum256(t, path)
			if err := call(canceled(), path, keysSource(300)); !errors.Is(err, context.Canceled) {
				t.Errorf("canceled before: %v", err)
			}
			if name == "rebuild" || name == "compact" {
				// Canceled by the Source, after some keys.
				ctx, cancel := context.WithCancel(context.Background())
				src := func(lo, hi uint64, add func([]byte, uint64) error) error {
					for i := 1; i <= 5000; i++ {
						if i == 10 {
							cancel()
						}
						if err := add(key(i), uint64(i)); err != nil {
							return err
						}
					}
					return nil
				}
				if err := call(ctx, path, src); !errors.Is(err, context.Canceled) {
					t.Errorf("canceled by the Source: %v", err)
				}
				cancel()
			}
			if sum256(t, path) != before {
				t.Fatal("a canceled call changed the file")
			}
			if err := call(context.Background(), path, keysSource(300)); err != nil {
				t.Errorf("with a live context: %v", err)
			}
		})
	}
}
