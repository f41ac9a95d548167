package recover

import "context"

// Cancellation (VerifyContext, RepairContext, RebuildContext,
// CompactContext, Backup). The long parts of these operations are reading
// the file and calling the Source: both go through a wrapper that checks
// the context, so a canceled context stops them at the next read of the
// file (at most 1 MiB of counters) or within ctxEvery keys of the Source.
// Nothing is replaced after a cancellation: the checks end before the
// rename that is the point of no return.

// ctxEvery is how many keys a Source may add between checks of the context.
const ctxEvery = 1024

// ctxImage is an image whose reads fail with the context's error once it is
// done.
type ctxImage struct {
	image
	ctx context.Context
}

func (c *ctxImage) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.image.ReadAt(p, off)
}

// withContext returns img reading under ctx (img itself for a context that
// is never done).
func withContext(ctx context.Context, img image) image {
	if ctx.Done() == nil {
		return img
	}
	return &ctxImage{image: img, ctx: ctx}
}

// ctxSource returns src, whose adds fail with the context's error once it is
// done (checked every ctxEvery keys, and before src is called).
func ctxSource(ctx context.Context, src Source) Source {
	if src == nil || ctx.Done() == nil {
		return src
	}
	return func(lo, hi uint64, add func([]byte, uint64) error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := 0
		return src(lo, hi, func(key []byte, id uint64) error {
			if n++; n%ctxEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			return add(key, id)
		})
	}
}
