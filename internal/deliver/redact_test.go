package deliver_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/deliver"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"https://hooks.example.com/services/T000/B000/secret", "https://hooks.example.com"},
		{"http://user:secret@host:3998/x?token=secret#secret", "http://host:3998"},
		{"HTTPS://Host.Example", "https://Host.Example"},
		{"http://[2001:db8::1]:8443/hooks?token=secret", "http://[2001:db8::1]:8443"},
		{"http://user@[::1]/", "http://[::1]"},
		{"http://bad host/secret?token=secret", "(unreadable URL)"},
		{"/relative/secret", "(unreadable URL)"},
		{"host:3998/secret", "(unreadable URL)"},
		{"", "(unreadable URL)"},
	} {
		if got := deliver.Redact(tc.url); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// urlSecrets are the tokens a destination's URL carries in its userinfo,
// path and query, none of which an attempt's outcome may show.
var urlSecrets = []string{"user", "PASSWORDSECRET", "PATHSECRET", "QUERYSECRET"}

const secretPath = "/services/T000/B000/PATHSECRET?token=QUERYSECRET"

// G3: the attempt log stores an outcome's error and body as they are, so
// they are redacted where they are made: net/http's error quotes the
// URL, a redirect's Location often keeps its path, and a destination may
// quote the request it could not serve.
func TestOutcomeShowsNoURLSecrets(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	echo, _ := destination(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("Cannot POST " + r.RequestURI + " (" + r.URL.Path + ", " + r.URL.RawQuery + ", " + r.URL.Query().Get("token") + ")"))
	})
	moved, _ := destination(t, func(w http.ResponseWriter, r *http.Request) {
		redirect(http.StatusMovedPermanently, "http://user:PASSWORDSECRET@"+r.Host+r.RequestURI)(w, r)
	})
	withSecrets := func(base string) string {
		return strings.Replace(base, "http://", "http://user:PASSWORDSECRET@", 1) + secretPath
	}
	for _, tc := range []struct{ name, url string }{
		{"refused", withSecrets("http://" + refused)},
		{"500", withSecrets(echo)},
		{"redirect", withSecrets(moved)},
		{"unreadable", "http://user:PASSWORDSECRET@bad host" + secretPath},
	} {
		out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: tc.url}, msg)
		if out.Err == nil {
			t.Fatalf("%s: outcome %+v, want a failure", tc.name, out)
		}
		for _, s := range urlSecrets {
			if strings.Contains(out.Err.Error(), s) || strings.Contains(out.Body, s) {
				t.Errorf("%s: error %q, body %q show %q", tc.name, out.Err, out.Body, s)
			}
		}
	}
}
