package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hookgate/hookgate/internal/config"
)

// mechanisms are the SASL mechanisms ?sasl= names, by their name there.
var mechanisms = map[string]func(user, password string) sasl.Mechanism{
	"plain": func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() },
	"scram-sha-256": func(u, p string) sasl.Mechanism {
		return scram.Auth{User: u, Pass: p}.AsSha256Mechanism()
	},
	"scram-sha-512": func(u, p string) sasl.Mechanism {
		return scram.Auth{User: u, Pass: p}.AsSha512Mechanism()
	},
}

// clientOptions are the options of d's client that its URL and password
// say: the seed brokers, TLS, SASL. Errors never quote the URL, which
// may hold a password where none belongs.
func clientOptions(d config.Destination) ([]kgo.Opt, error) {
	u, err := url.Parse(d.URL)
	if err != nil {
		// url.Error quotes the URL.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("url: %w", err)
	}
	if u.Host == "" {
		return nil, errors.New("url: no broker: want kafka://host:port[,host:port...]")
	}
	if _, has := u.User.Password(); has {
		return nil, errors.New("url: the URL holds a password: put it in password, as a reference (env:NAME)")
	}
	if u.Path != "" && u.Path != "/" || u.Fragment != "" || u.Opaque != "" {
		return nil, errors.New("url: a path or fragment is not used by a kafka destination; the topic is topic's")
	}
	var seeds []string
	for b := range strings.SplitSeq(u.Host, ",") {
		if b == "" {
			return nil, errors.New("url: an empty broker in the list; want kafka://host:port[,host:port...]")
		}
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			// No port: Kafka's.
			host, port = b, "9092"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return nil, fmt.Errorf("url: broker %q: want host:port", b)
		}
		seeds = append(seeds, net.JoinHostPort(host, port))
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	q := u.Query()
	for k := range q {
		if k != "tls" && k != "sasl" {
			return nil, fmt.Errorf("url: unknown parameter %q; want tls or sasl", k)
		}
	}
	if v := q.Get("tls"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("url: tls: %q: want 1 or 0", v)
		}
		if on {
			opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
		}
	}
	user, password := u.User.Username(), d.Password.Value()
	mechanism := q.Get("sasl")
	mech, known := mechanisms[mechanism]
	switch {
	case mechanism != "" && !known:
		return nil, fmt.Errorf("url: sasl: %q: want plain, scram-sha-256 or scram-sha-512", mechanism)
	case user == "" && (mechanism != "" || password != ""):
		return nil, errors.New("url: no user: SASL (sasl=, password) needs kafka://user@host:port")
	case user == "":
		return opts, nil
	case mechanism == "":
		return nil, errors.New("url: a user needs sasl=plain, scram-sha-256 or scram-sha-512")
	case password == "":
		return nil, fmt.Errorf("password: no password for user %s", user)
	}
	return append(opts, kgo.SASL(mech(user, password))), nil
}
