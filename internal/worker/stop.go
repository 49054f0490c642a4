package worker

import (
	"context"
	"time"
)

// afterStop returns the context of the store writes that finish work
// already taken when ctx ends (a leased batch, the attempts in flight):
// it outlives ctx by the lease, so that a clean shutdown records them,
// and then ends, so that a store that hangs cannot hold the shutdown. A
// write later than the lease would find the work leased to another owner
// anyway. The returned cancel releases it.
func (p *Pool) afterStop(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(p.opts.Lease, cancel) })
	return out, func() { stop(); cancel() }
}
