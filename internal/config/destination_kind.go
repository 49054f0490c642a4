package config

import (
	"net/url"
	"regexp"
	"strings"
)

// The kinds of destination, chosen by the scheme of its url.
const (
	KindHTTP     = "http"
	KindNATS     = "nats"
	KindRabbitMQ = "amqp"
	KindKafka    = "kafka"
)

// Kind is the destination's kind, from its URL's scheme: KindHTTP for
// http and https, KindNATS for nats and tls, KindRabbitMQ for amqp and
// amqps, KindKafka for kafka; "" for any other.
func (d Destination) Kind() string {
	u, err := url.Parse(d.URL)
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "http", "https":
		return KindHTTP
	case "nats", "tls":
		return KindNATS
	case "amqp", "amqps":
		return KindRabbitMQ
	case "kafka":
		return KindKafka
	}
	return ""
}

// templateField is a {placeholder} of a subject, routing key or topic.
var templateField = regexp.MustCompile(`\{[^}]*\}`)

// TemplateFields are the placeholders a subject, routing key or topic may
// hold, filled per event.
var TemplateFields = []string{"{source}", "{tenant}", "{type}"}

// Fill returns template with {source}, {tenant} and {type} replaced.
func Fill(template, source, tenant, typ string) string {
	return strings.NewReplacer("{source}", source, "{tenant}", tenant, "{type}", typ).Replace(template)
}

// checkKind checks the fields of the destination's kind, and that it sets
// none of another kind's.
func (d Destination) checkKind(add func(field, format string, args ...any)) {
	kind := d.Kind()
	if kind == "" || kind == KindHTTP {
		if problem := urlProblem(d.URL); problem != "" {
			add("url", "%s: want an absolute http or https URL, or a broker's nats://, amqp(s):// or kafka:// (the URL is not shown: its path, query or user may hold a token)", problem)
			return
		}
	}
	if kind != KindHTTP {
		if u, err := url.Parse(d.URL); err != nil || u.Host == "" {
			add("url", "no host: want %s://host:port", kind)
		} else if _, has := u.User.Password(); has {
			add("url", "the URL holds a password: put it in password, as a reference (env:NAME)")
		}
	}
	template := func(field, v string, required bool) {
		switch {
		case v == "" && required:
			add(field, "required for a %s destination", kind)
		case v != "":
			for _, f := range templateField.FindAllString(v, -1) {
				if !strings.Contains(strings.Join(TemplateFields, " "), f) {
					add(field, "%q: unknown placeholder %s; want %s", v, f, strings.Join(TemplateFields, ", "))
				}
			}
		}
	}
	unused := func(field string, set bool) {
		if set {
			add(field, "not used by a %s destination", kind)
		}
	}
	unused("subject", kind != KindNATS && d.Subject != "")
	unused("exchange", kind != KindRabbitMQ && d.Exchange != "")
	unused("routing_key", kind != KindRabbitMQ && d.RoutingKey != "")
	unused("topic", kind != KindKafka && d.Topic != "")
	unused("password", kind == KindHTTP && !d.Password.IsZero())
	unused("headers", kind != KindHTTP && len(d.Headers) > 0)
	unused("secret", kind != KindHTTP && !d.Secret.IsZero())
	switch kind {
	case KindNATS:
		template("subject", d.Subject, true)
	case KindRabbitMQ:
		template("exchange", d.Exchange, false)
		template("routing_key", d.RoutingKey, true)
	case KindKafka:
		template("topic", d.Topic, true)
	}
	if kind == KindNATS && strings.ContainsAny(Fill(d.Subject, "s", "t", "y"), " \t*>") {
		add("subject", "%q: a NATS subject to publish to has no spaces or wildcards", d.Subject)
	}
}
