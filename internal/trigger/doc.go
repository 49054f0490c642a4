// Package trigger makes a provider's example events as the provider sends
// them: a realistic body rendered from the fixtures under fixtures/, with
// fresh ids and timestamps, every header the provider sends, and the
// signature of the source it is for. `hookgate trigger` sends them from
// the command line, `hookgate sign` signs a body of the user's own with
// the same headers, and the console's Send test event button posts them
// through the gateway's own intake.
package trigger
