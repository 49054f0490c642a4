package provider

import (
	"cmp"
	"net/http"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// GitHub signs the body with X-Hub-Signature-256; the delivery id and the
// event are headers outside the signature.
const GitHub = "github"

func init() {
	register(&Provider{
		Name: GitHub,
		rank: 30,
		NewScheme: func(_ Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewGitHub(secret, opts...)
		},
		Preset: Preset{
			Key:   []Selector{Field("header:X-GitHub-Delivery")},
			Scope: [2]Selector{{}, Field("header:X-GitHub-Event")},
			Headers: []string{"X-Github-Delivery", "X-Github-Event", "X-Github-Hook-Id",
				"X-Github-Hook-Installation-Target-Id", "X-Github-Hook-Installation-Target-Type"},
		},
		Notes: Notes{Signed: "the body only", Key: "header:X-GitHub-Delivery", Tenant: "none",
			Recovered: "no webhook came: redelivery asked of GitHub (it comes through intake)",
			Failed:    "could not be keyed, or GitHub refused the redelivery"},
		Headers: func(event, _ string, _ time.Time) http.Header {
			h := http.Header{}
			h.Set("X-GitHub-Delivery", newUUID())
			h.Set("X-GitHub-Event", cmp.Or(event, "ping"))
			return h
		},
		SenderHeaders:      githubSenderHeaders,
		Reconcile:          newGitHubReconciler,
		ReconcileFields:    []string{FieldTypes, FieldHook},
		ReconcileCheck:     checkGitHubReconcile,
		ReconcileByHeaders: true,
		Examples: []Example{
			{"push", "push.json", "a commit pushed to main"},
			{"pull_request", "pull_request.json", "a pull request was opened"},
			{"ping", "ping.json", "the ping GitHub sends when a webhook is created"},
			{"issues", "issues.json", "an issue was opened"},
		},
	})
}

// githubSenderHeaders adds GitHub's User-Agent, its hook headers (naming
// the hook and repository of the examples) and, with a secret, the SHA-1
// signature GitHub still sends beside the SHA-256 one.
func githubSenderHeaders(h http.Header, secret string, body []byte) error {
	h.Set("User-Agent", "GitHub-Hookshot/4f3c2a1")
	h.Set("X-GitHub-Hook-ID", "498912341")
	h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	h.Set("X-GitHub-Hook-Installation-Target-ID", "812345678")
	if secret == "" {
		return nil
	}
	sha1, err := verify.NewHMAC(secret, verify.HMACConfig{Header: "X-Hub-Signature", Algorithm: "sha1", Encoding: "hex", Prefix: "sha1="})
	if err != nil {
		return err
	}
	return sha1.Sign(&http.Request{Header: h}, body)
}
