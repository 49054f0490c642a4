package source

import (
	"fmt"
	"sync"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
)

// format is how a provider's body is split into events.
type format = provider.Body

const (
	// formatRaw: one event; the body is not parsed.
	formatRaw = provider.BodyRaw
	// formatJSON: one event; the body must be JSON.
	formatJSON = provider.BodyJSON
	// formatJSONArray: a JSON array, one event per element (HubSpot).
	formatJSONArray = provider.BodyJSONArray
	// formatSOAP: an outbound message, one event per Notification.
	formatSOAP = provider.BodySOAP
)

// preset is a provider's preset compiled into selectors: where the event
// id, scope, tenant and entity fields are, and the headers later stages
// need.
type preset struct {
	format  format
	key     []selector
	scope   [2]selector // object type, action; nil for none
	tenant  selector
	entity  entitySels
	headers []string
}

// entitySels holds the selectors of an event's entity fields; nil for none.
type entitySels struct {
	typ, id, version, state selector
}

// presets compiles every provider's preset once; a preset that does not
// compile is a bug of internal/provider, which its tests catch.
var presets = sync.OnceValue(func() map[string]preset {
	out := map[string]preset{}
	for _, p := range provider.All() {
		pp := p.Preset
		c := preset{
			format:  pp.Body,
			scope:   [2]selector{compile(pp.Scope[0]), compile(pp.Scope[1])},
			tenant:  compile(pp.Tenant),
			headers: pp.Headers,
			entity: entitySels{typ: compile(pp.Entity.Type), id: compile(pp.Entity.ID),
				version: compile(pp.Entity.Version), state: compile(pp.Entity.State)},
		}
		for _, k := range pp.Key {
			c.key = append(c.key, compile(k))
		}
		out[p.Name] = c
	}
	return out
})

// compile turns a preset's selector into one a source evaluates; nil for
// the zero Selector.
func compile(s provider.Selector) selector {
	switch {
	case s.Derived != nil:
		d := derivedSel{desc: s.Derived.Desc, fn: s.Derived.Value, fields: map[string]fieldSel{}}
		for i, r := range s.Derived.Reads {
			f := mustSel(r)
			if i == 0 {
				d.from = f.sel.Kind
			}
			d.read = append(d.read, f.sel)
			d.fields[r] = f
		}
		return d
	case s.Syntax != "":
		return mustSel(s.Syntax)
	}
	return nil
}

// derivedSel is a preset's selector that computes its value from the
// values of other selectors, in a way the config syntax cannot say.
type derivedSel struct {
	desc string
	// from is where the first selector it reads reads.
	from config.SelectorKind
	// read is what fn reads, in config form, and fields the same
	// compiled, by their config syntax.
	read   []config.Selector
	fields map[string]fieldSel
	fn     func(e provider.Event) (string, error)
}

func (d derivedSel) kind() config.SelectorKind { return d.from }
func (d derivedSel) String() string            { return d.desc }
func (d derivedSel) reads() []config.Selector  { return d.read }
func (d derivedSel) value(in *input) (string, error) {
	return d.fn(derivedInput{in: in, fields: d.fields})
}

// derivedInput is what a derived selector reads: the values of the
// selectors it declares, nothing else.
type derivedInput struct {
	in     *input
	fields map[string]fieldSel
}

func (d derivedInput) Read(sel string) (string, error) {
	f, ok := d.fields[sel]
	if !ok {
		return "", fmt.Errorf("preset selector reads %q, which it does not declare", sel)
	}
	return f.value(d.in)
}
