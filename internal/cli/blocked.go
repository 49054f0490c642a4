package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("blocked", "list or skip the keys an ordered destination holds behind a failed delivery (on_exhausted: block)", runBlocked)
}

// blockedKeysShown is how many blocked keys of one lane are listed.
const blockedKeysShown = 1000

func runBlocked(ctx context.Context, args []string, std IO) error {
	return runGroup(ctx, doc{
		name: "blocked",
		text: `Keys of ordered destinations (order: entity, on_exhausted: block) that
wait behind a delivery that failed for good: none of the key's later
deliveries is made until its event is replayed (replay --id ID, delivered
first, at its position) or the key is skipped (the event stays dead, and
the key's next delivery says one was skipped).`,
		examples: []string{"blocked list", "blocked skip --source shop --destination ledger --key order:42", "replay --id 1234"},
	}, []subcommand{
		{"list", "list the blocked keys, each with the event that blocks it", blockedList},
		{"skip", "let blocked keys move on without their failed delivery", blockedSkip},
	}, args, std)
}

// blockedJSON is a blocked key as --json prints it.
type blockedJSON struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Key         string `json:"key"`
	EventID     int64  `json:"event_id"`
}

func blockedList(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "blocked list",
		text: `List the blocked keys of every ordered destination (or of --source and
--destination), each with the inbox id of the event that blocks it.`,
		examples: []string{"blocked list", "blocked list --destination ledger --json"},
	}, std)
	db := storeFlags(fs.FlagSet)
	source := fs.String("source", "", "only the destinations of source `S`")
	destination := fs.String("destination", "", "only destination `D`")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	store, skipper, err := openSkipper(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	st, err := store.Stats(ctx)
	if err != nil {
		return err
	}
	var rows []blockedJSON
	for _, l := range st.Lanes {
		if l.Blocked == 0 || *source != "" && l.Source != *source || *destination != "" && l.Destination != *destination {
			continue
		}
		keys, err := skipper.BlockedKeys(ctx, l.Lane, blockedKeysShown)
		if err != nil {
			return err
		}
		for _, k := range keys {
			rows = append(rows, blockedJSON{Source: l.Source, Destination: l.Destination, Key: k.Key, EventID: k.EventID})
		}
	}
	if *asJSON {
		enc := json.NewEncoder(std.Stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(std.Stdout, "no blocked keys")
		return err
	}
	t := newTable(std.Stdout, "SOURCE", "DESTINATION", "KEY", "EVENT")
	for _, r := range rows {
		t.row(r.Source, r.Destination, r.Key, strconv.FormatInt(r.EventID, 10))
	}
	return t.flush()
}

func blockedSkip(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "blocked skip",
		text: `Let blocked keys of an ordered destination move on: the failed delivery
stays failed (its event dead), the key's next delivery is made, carrying
webhook-skipped. To deliver the failed event instead, replay it.`,
		examples: []string{"blocked skip --source shop --destination ledger --key order:42 --key order:43"},
	}, std)
	db := storeFlags(fs.FlagSet)
	source := fs.String("source", "", "the source `S` (required)")
	destination := fs.String("destination", "", "the ordered destination `D` (required)")
	var keys keyFlags
	fs.Var(&keys, "key", "a blocked `KEY`, as 'blocked list' prints it (repeatable; required)")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if *source == "" || *destination == "" || len(keys) == 0 {
		return usagef("blocked skip: give --source, --destination and at least one --key (run 'hookgate blocked list')")
	}
	store, skipper, err := openSkipper(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	lane := inbox.Lane{Source: *source, Destination: *destination}
	var missing []string
	for _, key := range keys {
		ok, err := skipper.SkipKey(ctx, lane, key)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, key)
			continue
		}
		if _, err := fmt.Fprintf(std.Stdout, "skipped %s: its next delivery to %s is made\n", key, *destination); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("blocked skip: %q: not blocked in %s/%s", missing, *source, *destination)
	}
	return nil
}

// keyFlags collects repeated --key flags.
type keyFlags []string

func (f *keyFlags) String() string { return strings.Join(*f, ",") }

func (f *keyFlags) Set(v string) error {
	if v == "" {
		return errors.New("an empty key")
	}
	*f = append(*f, v)
	return nil
}

// openSkipper opens the database of db, which must keep per-key order.
func openSkipper(ctx context.Context, db *storeOpts) (inbox.Backend, inbox.OrderSkipper, error) {
	store, _, err := db.openDatabase(ctx)
	if err != nil {
		return nil, nil, err
	}
	skipper, ok := store.(inbox.OrderSkipper)
	if !ok {
		store.Close()
		return nil, nil, errors.New("blocked: this database keeps no per-key order")
	}
	return store, skipper, nil
}
