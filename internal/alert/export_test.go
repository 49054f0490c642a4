package alert

import "context"

// SendDue sends the notices due now, for tests that drive the engine
// check by check.
func (e *Engine) SendDue(ctx context.Context) int { return e.sendDue(ctx) }
