package source_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/source"
)

func ExampleSource_Events() {
	src, err := source.New(config.Source{
		Name:     "gh",
		Provider: "github",
		Secret:   config.NewSecret("github-webhook-secret"),
		Tenant:   "path",
	}, config.Dedupe{Window: config.DefaultWindow})
	if err != nil {
		fmt.Println(err)
		return
	}

	body := []byte(`{"action":"opened","number":42}`)
	r := httptest.NewRequest("POST", "/in/gh/acme", strings.NewReader(string(body)))
	r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	r.Header.Set("X-GitHub-Event", "pull_request")
	if err := src.Signer().Sign(r, body); err != nil { // what GitHub does
		fmt.Println(err)
		return
	}

	if _, err := src.Authenticate(r, body); err != nil {
		fmt.Println("401:", err)
		return
	}
	events, err := src.Events(r, body, "acme")
	if err != nil {
		fmt.Println("400:", err)
		return
	}
	for _, ev := range events {
		fmt.Println(ev.Key)
	}

	_, err = src.Events(r, body, "")
	fmt.Println("400:", err)
	// Output:
	// acme/gh//pull_request/72d3162e-cc78-11e3-81ab-4c9367dc0958
	// 400: event 0: tenant: path: missing or empty
}
