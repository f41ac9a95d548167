package recover_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dablooms/dablooms/recover"
)

// TestContextCanceled: VerifyContext, RepairContext, RebuildContext and
// CompactContext return the context's error and leave the file as it was,
// for a context canceled before the call and for one canceled while the
// Source adds keys (the control: the same calls with a live context
// succeed).
func TestContextCanceled(t *testing.T) {
	calls := map[string]func(ctx context.Context, path string, src recover.Source) error{
		"verify": func(ctx context.Context, path string, _ recover.Source) error {
			_, err := recover.VerifyContext(ctx, path, recover.Booted(&recover.VerifyOptions{}, recover.TestBoot))
			return err
		},
		"repair": func(ctx context.Context, path string, _ recover.Source) error {
			_, err := recover.RepairContext(ctx, path, recover.Booted(&recover.RepairOptions{}, recover.TestBoot))
			return err
		},
		"rebuild": func(ctx context.Context, path string, src recover.Source) error {
			_, err := recover.RebuildContext(ctx, path, src, recover.Booted(&recover.RepairOptions{}, "another-boot"))
			return err
		},
		"compact": func(ctx context.Context, path string, src recover.Source) error {
			_, err := recover.CompactContext(ctx, path, src, recover.Booted(&recover.CompactOptions{}, recover.TestBoot))
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			path := recover.InterruptedFile(t)
			before := recover.Sum256(t, path)
			if err := call(recover.Canceled(), path, recover.KeysSource(300)); !errors.Is(err, context.Canceled) {
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
						if err := add(recover.Key(i), uint64(i)); err != nil {
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
			if recover.Sum256(t, path) != before {
				t.Fatal("a canceled call changed the file")
			}
			if err := call(context.Background(), path, recover.KeysSource(300)); err != nil {
				t.Errorf("with a live context: %v", err)
			}
		})
	}
}
