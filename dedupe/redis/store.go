package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hookgate/hookgate/dedupe"
)

const (
	// DefaultPrefix is the key prefix when Options.Prefix is empty.
	DefaultPrefix = "hookgate"
	// DefaultTimeout bounds each call when Options.Timeout is zero: a
	// Redis on the local network answers in well under a millisecond, so
	// a call that takes longer than this finds Redis in trouble, and the
	// caller is better served by an error it can fall back on.
	DefaultTimeout = 100 * time.Millisecond
)

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// Prefix starts every key, inside a hash tag: a hash h is kept at
	// "{Prefix}:h" in hex, so all of a store's keys share one Redis Cluster
	// slot and one script can read and write a whole batch. Stores that
	// share a prefix share their keys (the nodes of one gateway); stores on
	// one Redis with different prefixes never meet. Empty means
	// DefaultPrefix. It may not contain '{' or '}'.
	Prefix string
	// Timeout bounds each call to Redis, from sending the batch to reading
	// the answer; a call that runs out fails with [dedupe.ErrUnavailable].
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// Now returns the current time; nil means Redis's own clock (TIME),
	// which is also the clock Redis expires keys by. Tests pass a manual
	// clock to exercise expiry without waiting: the scripts then judge
	// expiry by the times Now gives, and [Store.Sweep] removes what has
	// expired by that clock.
	Now func() time.Time
}

// Store is a [dedupe.Store] kept in Redis. It is safe for concurrent use by
// many goroutines and by every process and node that reaches the same
// Redis with the same prefix.
type Store struct {
	client    goredis.UniversalClient
	ownClient bool
	tag       string // "{prefix}:", the start of every key
	timeout   time.Duration
	now       func() time.Time
}

var _ dedupe.Store = (*Store)(nil)

// New returns a store on client, which may be a single server, a Sentinel
// failover client or a Cluster client. Calls are bounded by
// Options.Timeout through their context, which a client honours only with
// ContextTimeoutEnabled set; otherwise its own read and write timeouts
// bound a server that stops answering.
func New(client goredis.UniversalClient, opts Options) (*Store, error) {
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("dedupe/redis: prefix %q: may not contain '{' or '}'", opts.Prefix)
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("dedupe/redis: timeout %v: may not be negative", opts.Timeout)
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &Store{client: client, tag: "{" + prefix + "}:", timeout: timeout, now: opts.Now}, nil
}

// Open connects to the Redis server at url (redis://[user:password@]host:port/db,
// or rediss:// for TLS, as go-redis's ParseURL reads it) and returns a
// store on it whose client honours Options.Timeout; [Store.Close] closes
// the connections.
func Open(url string, opts Options) (*Store, error) {
	o, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("dedupe/redis: open: %w", err)
	}
	o.ContextTimeoutEnabled = true
	client := goredis.NewClient(o)
	s, err := New(client, opts)
	if err != nil {
		client.Close()
		return nil, err
	}
	s.ownClient = true
	return s, nil
}

// Close closes the connections if the store was made by [Open]; a store
// made by [New] leaves its client to the caller.
func (s *Store) Close() error {
	if s.ownClient {
		return s.client.Close()
	}
	return nil
}

// Key returns the Redis key the store keeps h at.
func (s *Store) Key(h dedupe.Hash) string {
	return s.tag + h.String()
}

// Values are "token|state|firstSeen|expires": state l for a lease, c for a
// committed key, times in Unix milliseconds on the store's clock. The
// scripts read the time from ARGV[1] when the store has Options.Now and
// from Redis's TIME otherwise; TIME is allowed in a script because Redis 7
// replicates the writes a script makes, not the script.
const scriptNow = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ms(x) return string.format('%.0f', x) end
local function parse(key, v)
  local tok, state, first, exp = string.match(v, '^(%d+)|([lc])|(%d+)|(%d+)$')
  if not tok then
    return redis.error_reply('dedupe/redis: ' .. key .. ' holds a value the store did not write')
  end
  return {tok = tok, state = state, first = tonumber(first), exp = tonumber(exp)}
end
`

// claimScript takes a lease of ARGV[2] ms on each key with the token
// ARGV[2+i] and returns {status, firstSeen, expires} per key, status as
// dedupe.Status numbers it. A key held with the same token (the claim sent
// again after its answer was lost) is New again.
var claimScript = goredis.NewScript(scriptNow + `
local ttl = tonumber(ARGV[2])
local out = {}
for i, key in ipairs(KEYS) do
  local tok = ARGV[2 + i]
  local fresh = tok .. '|l|' .. ms(now) .. '|' .. ms(now + ttl)
  local r = {1, now, now + ttl}
  if not redis.call('SET', key, fresh, 'NX', 'PX', ttl) then
    local e = parse(key, redis.call('GET', key))
    if e.err then return e end
    if e.exp <= now then
      -- expired on the caller's clock while Redis still holds it
      redis.call('SET', key, fresh, 'PX', ttl)
    elseif e.tok == tok and e.state == 'l' then
      r = {1, e.first, e.exp}
    elseif e.state == 'c' then
      r = {2, e.first, e.exp}
    else
      r = {3, e.first, e.exp}
    end
  end
  out[i] = r
end
return out
`)

// commitScript commits each key whose live lease holds the token ARGV[2+i]
// for ARGV[2] ms from now; a key already committed under that token keeps
// its window. It returns the 1-based index of the first lease that no
// longer holds its key, or 0.
var commitScript = goredis.NewScript(scriptNow + `
local window = tonumber(ARGV[2])
local lost = 0
for i, key in ipairs(KEYS) do
  local tok = ARGV[2 + i]
  local v = redis.call('GET', key)
  local held = false
  if v then
    local e = parse(key, v)
    if e.err then return e end
    if e.tok == tok and e.exp > now then
      held = true
      if e.state == 'l' then
        redis.call('SET', key, tok .. '|c|' .. ms(e.first) .. '|' .. ms(now + window), 'PX', window)
      end
    end
  end
  if not held and lost == 0 then lost = i end
end
return lost
`)

// recordScript writes each key as committed with the first-seen time
// ARGV[2i] and the expiry ARGV[2i+1], whoever holds it, keeping the
// holder's token so that its own Commit still succeeds; a key whose expiry
// has passed is left as it is.
var recordScript = goredis.NewScript(scriptNow + `
for i, key in ipairs(KEYS) do
  local exp = tonumber(ARGV[2 * i + 1])
  if exp > now then
    local tok = '0'
    local v = redis.call('GET', key)
    if v then
      local e = parse(key, v)
      if e.err then return e end
      tok = e.tok
    end
    redis.call('SET', key, tok .. '|c|' .. ARGV[2 * i] .. '|' .. ms(exp), 'PX', exp - now)
  end
end
return 0
`)

// releaseScript deletes each key whose uncommitted lease holds the token
// ARGV[i] and returns how many it deleted.
var releaseScript = goredis.NewScript(`
local n = 0
for i, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if v and string.match(v, '^(%d+)|l|') == ARGV[i] then
    redis.call('DEL', key)
    n = n + 1
  end
end
return n
`)

// sweepScript deletes the keys that expired by ARGV[1] and returns how
// many it deleted.
var sweepScript = goredis.NewScript(scriptNow + `
local n = 0
for _, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if v then
    local e = parse(key, v)
    if e.err then return e end
    if e.exp <= now then
      redis.call('DEL', key)
      n = n + 1
    end
  end
end
return n
`)

// Claim implements [dedupe.Store] in one script call for the whole batch:
// one round trip, and Redis runs it without interleaving another client's
// commands, so a hash repeated within the batch sees the claim its first
// occurrence took.
func (s *Store) Claim(ctx context.Context, lease time.Duration, hashes ...dedupe.Hash) ([]dedupe.Result, error) {
	if len(hashes) == 0 {
		return []dedupe.Result{}, nil
	}
	if err := checkTTL("lease", lease); err != nil {
		return nil, err
	}
	keys := s.keys(len(hashes), func(i int) dedupe.Hash { return hashes[i] })
	tokens := make([]dedupe.Token, len(hashes))
	args := s.args(len(hashes), lease)
	for i := range tokens {
		tokens[i] = dedupe.NewToken()
		args = append(args, strconv.FormatUint(uint64(tokens[i]), 10))
	}
	raw, err := s.run(ctx, "claim", claimScript, keys, args)
	if err != nil {
		return nil, err
	}
	rows, ok := raw.([]any)
	if !ok || len(rows) != len(hashes) {
		return nil, s.fail(ctx, "claim", fmt.Errorf("script answered %T of %d, want %d rows", raw, len(rows), len(hashes)))
	}
	rs := make([]dedupe.Result, len(hashes))
	for i, row := range rows {
		f, ok := row.([]any)
		if !ok || len(f) != 3 {
			return nil, s.fail(ctx, "claim", fmt.Errorf("script answered row %v", row))
		}
		status, first, expires := asInt(f[0]), asInt(f[1]), asInt(f[2])
		if status < int64(dedupe.New) || status > int64(dedupe.InFlight) {
			return nil, s.fail(ctx, "claim", fmt.Errorf("script answered status %v", f[0]))
		}
		r := &rs[i]
		r.Status = dedupe.Status(status)
		r.FirstSeen, r.Expires = time.UnixMilli(first).UTC(), time.UnixMilli(expires).UTC()
		if r.Status == dedupe.New {
			r.Lease = dedupe.Lease{Hash: hashes[i], Token: tokens[i]}
		}
	}
	return rs, nil
}

// Commit implements [dedupe.Store] in one script call. Committing a lease
// again leaves the window its first commit set.
func (s *Store) Commit(ctx context.Context, window time.Duration, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	if err := checkTTL("window", window); err != nil {
		return err
	}
	args := s.args(len(leases), window)
	args = appendTokens(args, leases)
	raw, err := s.run(ctx, "commit", commitScript, s.leaseKeys(leases), args)
	if err != nil {
		return err
	}
	if lost := asInt(raw); lost > 0 {
		return fmt.Errorf("dedupe/redis: commit %s: %w", leases[lost-1].Hash, dedupe.ErrLeaseLost)
	}
	return nil
}

// Committed is what a durable store decided about a key: that it holds
// the event, first seen at FirstSeen and a duplicate until Expires.
type Committed struct {
	Hash      dedupe.Hash
	FirstSeen time.Time
	Expires   time.Time
}

// Record writes keys as committed with the times a durable store (the
// gateway's inbox) gave them, in one script call, whoever holds them: the
// durable store is the arbiter, so what it committed is committed even if
// Redis lost the lease in between (a flush, an eviction, a failover) or
// another claimer took it since. A claimer that holds the key keeps its
// token, so its own Commit still succeeds and its Release leaves the key.
// A key whose Expires has passed on the store's clock is left as it is.
func (s *Store) Record(ctx context.Context, keys ...Committed) error {
	if len(keys) == 0 {
		return nil
	}
	args := append(make([]any, 0, 1+2*len(keys)), s.nowArg())
	for _, k := range keys {
		args = append(args, k.FirstSeen.UnixMilli(), k.Expires.UnixMilli())
	}
	_, err := s.run(ctx, "record", recordScript, s.keys(len(keys), func(i int) dedupe.Hash { return keys[i].Hash }), args)
	return err
}

// Release implements [dedupe.Store] in one script call: compare and
// delete, so a lease that was taken over or committed is left alone.
func (s *Store) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	_, err := s.run(ctx, "release", releaseScript, s.leaseKeys(leases), appendTokens(nil, leases))
	return err
}

// sweepScan is how many keys one SCAN step asks for, and so how many keys
// one sweep script deletes at most.
const sweepScan = 500

// Sweep implements [dedupe.Store]. On Redis's clock there is nothing to
// do: every key carries its own expiry (PX), and Redis removes it then,
// so Sweep reports 0 without a round trip. With Options.Now, whose time
// Redis does not know, it scans the store's keys and removes those that
// expired by that clock. The scan covers the server or Cluster node the
// client sends it to, which holds every key of the prefix.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if s.now == nil {
		return 0, ctx.Err()
	}
	pattern := globEscape(s.tag) + "*"
	removed := 0
	var cursor uint64
	for {
		var keys []string
		err := s.call(ctx, func(ctx context.Context) error {
			var err error
			keys, cursor, err = s.client.Scan(ctx, cursor, pattern, sweepScan).Result()
			return err
		})
		if err != nil {
			return removed, s.fail(ctx, "sweep", err)
		}
		if len(keys) > 0 {
			n, err := s.run(ctx, "sweep", sweepScript, keys, []any{s.nowArg()})
			if err != nil {
				return removed, err
			}
			removed += int(asInt(n))
		}
		if cursor == 0 {
			return removed, nil
		}
	}
}

// run runs script under the store's timeout.
func (s *Store) run(ctx context.Context, op string, script *goredis.Script, keys []string, args []any) (any, error) {
	var raw any
	err := s.call(ctx, func(ctx context.Context) error {
		var err error
		raw, err = script.Run(ctx, s.client, keys, args...).Result()
		return err
	})
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return raw, nil
}

// call runs one round trip under the store's timeout; a context the
// caller already ended is reported without sending anything.
func (s *Store) call(ctx context.Context, f func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return f(ctx)
}

// fail wraps an error from Redis. When the caller's ctx has ended, the
// error is the caller's doing and wraps ctx.Err(); otherwise, the store's
// own timeout included, it wraps [dedupe.ErrUnavailable].
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("dedupe/redis: %s: %w", op, err)
		}
		return fmt.Errorf("dedupe/redis: %s: %w (%v)", op, cerr, err)
	}
	return fmt.Errorf("dedupe/redis: %s: %w: %w", op, dedupe.ErrUnavailable, err)
}

// args starts a script's arguments: the store's time ("" for Redis's
// clock) and a duration in milliseconds, with room for n more.
func (s *Store) args(n int, d time.Duration) []any {
	return append(make([]any, 0, 2+n), s.nowArg(), d.Milliseconds())
}

// nowArg is the time argument of the scripts: the store's time in Unix
// milliseconds, or "" for Redis's clock.
func (s *Store) nowArg() string {
	if s.now == nil {
		return ""
	}
	return strconv.FormatInt(s.now().UnixMilli(), 10)
}

// keys returns the Redis keys of n hashes.
func (s *Store) keys(n int, hash func(int) dedupe.Hash) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = s.Key(hash(i))
	}
	return keys
}

// leaseKeys returns the Redis keys of leases.
func (s *Store) leaseKeys(leases []dedupe.Lease) []string {
	return s.keys(len(leases), func(i int) dedupe.Hash { return leases[i].Hash })
}

// appendTokens appends the tokens of leases to args.
func appendTokens(args []any, leases []dedupe.Lease) []any {
	for _, l := range leases {
		args = append(args, strconv.FormatUint(uint64(l.Token), 10))
	}
	return args
}

// checkTTL refuses a lease or window Redis cannot keep: PX counts whole
// milliseconds from 1.
func checkTTL(what string, d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("dedupe/redis: %s %v: shorter than a millisecond", what, d)
	}
	return nil
}

// asInt reads an integer a script returned; anything else reads as 0.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// globEscape escapes the characters SCAN's MATCH pattern gives meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
