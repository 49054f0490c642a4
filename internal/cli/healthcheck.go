package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/config"
)

func init() {
	register("healthcheck", "exit 0 when a running gateway's /readyz says it is ready (for images without curl)", runHealthcheck)
}

// healthcheckTimeout bounds the whole probe: /readyz answers within a
// second whatever the store does, so a gateway that has not answered in
// three is not ready, and a container runtime's probe must not pile up.
const healthcheckTimeout = 3 * time.Second

func runHealthcheck(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "healthcheck",
		text: `Ask a running gateway's /readyz whether it is ready: exit status 0 when it
answers 200 (degraded included: a node that spools still takes events),
1 otherwise, with the reason on stderr. The URL defaults to /readyz on
the config's listen address (127.0.0.1 for an address on every
interface). Made for a container's HEALTHCHECK in an image without curl;
it gives up after 3 seconds.`,
		examples: []string{
			"healthcheck",
			"healthcheck --config /etc/hookgate/hookgate.yaml",
			"healthcheck --url http://127.0.0.1:8080/readyz",
		},
	}, std)
	configPath := fs.String("config", os.Getenv("HOOKGATE_CONFIG"),
		"config `FILE` whose listen address is asked (default $HOOKGATE_CONFIG; none: "+config.DefaultListen+")")
	target := fs.String("url", "", "the `URL` to ask, a gateway's base URL or its /readyz (overrides --config)")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	u, err := readyzURL(*target, *configPath)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return usagef("healthcheck: --url %q: %v", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: not ready: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	answer := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: not ready: GET %s: %s: %s", u, resp.Status, answer)
	}
	_, err = fmt.Fprintf(std.Stdout, "ready: %s\n", answer)
	return err
}

// readyzURL is the URL healthcheck asks: target, with /readyz added to a
// base URL, or /readyz on the listen address of the config at path (the
// default listen address without one).
func readyzURL(target, path string) (string, error) {
	if target != "" {
		u, err := url.Parse(target)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return "", usagef("healthcheck: --url %q: want an absolute http:// or https:// URL", target)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/readyz"
		}
		return u.String(), nil
	}
	cfg := config.Default()
	if path != "" {
		var err error
		if cfg, err = config.LoadDatabase(path); err != nil {
			return "", err
		}
	}
	base, err := listenBase(cfg.Listen)
	if err != nil {
		return "", err
	}
	return base + "/readyz", nil
}

// listenBase is the base URL at which a gateway listening on the address
// listen answers on this machine: on loopback for an address on every
// interface.
func listenBase(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", listen, err)
	}
	switch ip := net.ParseIP(host); {
	case host == "", ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
