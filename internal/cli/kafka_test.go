package cli_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/deliver/kafka/kafkatest"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

// kafkaInFlight is the Kafka destination's max_in_flight: at most this
// many records can be written without their acknowledgement reaching
// serve when the broker is cut, so at most this many are written twice.
const kafkaInFlight = 8

// kafkaConfig writes the configuration of a serve whose source app
// delivers to the Kafka topic hooks at url (password, when set, in a
// file), retrying and pausing quickly, and returns its path.
func kafkaConfig(t *testing.T, url, password string) string {
	t.Helper()
	dir := t.TempDir()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	var pw string
	if password != "" {
		if err := os.WriteFile(dir+"/kafka-password", []byte(password), 0o600); err != nil {
			t.Fatal(err)
		}
		pw = "        password: file:" + dir + "/kafka-password\n"
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%s/hookgate.db
workers: 2
lease: 3s
sources:
  - name: app
    provider: standard
    secret: file:%s
    destinations:
      - name: bus
        url: %s
        topic: hooks
%s        timeout: 2s
        max_attempts: 1000
        max_in_flight: %d
        retry_initial: 50ms
        retry_max_delay: 500ms
        pause_after: 3
        pause_for: 500ms
`, dir, secretFile, url, pw, kafkaInFlight)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kafkaEvent is a record read back: the event's id as sent to serve (the
// payload's data.n) and its webhook-id.
type kafkaEvent struct{ sent, webhookID string }

// readKafka reads the topic hooks until cond holds of what was read.
func readKafka(t *testing.T, c *kafkatest.Cluster, cond func([]kafkaEvent) bool, opts ...kgo.Opt) []kafkaEvent {
	t.Helper()
	var got []kafkaEvent
	eventually(t, "the records read back", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		rs, err := c.Read(ctx, "hooks", opts...)
		if err != nil {
			t.Logf("read: %v", err)
			return false
		}
		got = got[:0]
		for _, r := range rs {
			var p struct {
				Data struct{ N string }
			}
			if err := json.Unmarshal(r.Value, &p); err != nil {
				t.Fatalf("record %s: %v", r.Value, err)
			}
			got = append(got, kafkaEvent{p.Data.N, kafkatest.Header(r, "webhook-id")})
		}
		return cond(got)
	})
	return got
}

// sendAll sends the events ids to serve, each accepted.
func sendAll(t *testing.T, p *process, ids ...string) {
	t.Helper()
	src, client := signer(t), &http.Client{Timeout: 10 * time.Second}
	for _, id := range ids {
		if st, err := send(t.Context(), client, src, p.addr, id); err != nil || st != http.StatusAccepted {
			t.Fatalf("send %s: %d %v", id, st, err)
		}
	}
}

func eventIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s_%03d", prefix, i)
	}
	return ids
}

// stats runs hookgate stats --json on the configuration at path.
func stats(t *testing.T, path string) admin.Stats {
	t.Helper()
	out, err := command(t, "stats", "--json", "--config", path).Output()
	if err != nil {
		t.Fatalf("hookgate stats: %v", err)
	}
	var st admin.Stats
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("hookgate stats --json: %v\n%s", err, out)
	}
	return st
}

// laneState is the state of app's destination bus.
func laneState(t *testing.T, path string) admin.Lane {
	t.Helper()
	for _, l := range stats(t, path).Lanes {
		if l.Source == "app" && l.Destination == "bus" {
			return l
		}
	}
	return admin.Lane{}
}

// Through a real serve: 50 events read back from Kafka once each; then the
// broker cut while 50 more flow: they are accepted, the attempts fail and
// are recorded, the circuit opens; the broker back, every event arrives
// under the one webhook-id it always had, with at most the in-flight
// count written twice.
func TestKafkaDeliversOnceThroughACut(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(4, "hooks"))
	path := kafkaConfig(t, "kafka://"+c.Addr, "")
	p := startServe(t, "--config", path)

	first := eventIDs("evt_first", 50)
	sendAll(t, p, first...)
	got := readKafka(t, c, func(es []kafkaEvent) bool { return len(es) >= len(first) })
	seen := map[string]int{}
	for _, e := range got {
		seen[e.sent]++
	}
	for _, id := range first {
		if seen[id] != 1 {
			t.Errorf("%s read %d times, want once", id, seen[id])
		}
	}
	if len(got) != len(first) {
		t.Errorf("read %d records for %d events", len(got), len(first))
	}

	cut := eventIDs("evt_cut", 50)
	sendAll(t, p, cut[:20]...)
	c.Proxy.Cut()
	sendAll(t, p, cut[20:]...)
	eventually(t, "the destination paused", func() bool {
		l := laneState(t, path)
		return l.State == inbox.LanePaused && l.Failures >= 3 && l.LastError != ""
	})
	c.Proxy.Restore()

	all := append(first, cut...)
	got = readKafka(t, c, func(es []kafkaEvent) bool {
		sent := map[string]bool{}
		for _, e := range es {
			sent[e.sent] = true
		}
		return len(sent) == len(all)
	})
	webhookID, events := map[string]string{}, map[string]string{}
	seen = map[string]int{}
	for _, e := range got {
		seen[e.sent]++
		if w, ok := webhookID[e.sent]; ok && w != e.webhookID {
			t.Errorf("%s read with webhook-ids %s and %s", e.sent, w, e.webhookID)
		}
		if s, ok := events[e.webhookID]; ok && s != e.sent {
			t.Errorf("webhook-id %s read for %s and %s", e.webhookID, s, e.sent)
		}
		webhookID[e.sent], events[e.webhookID] = e.webhookID, e.sent
	}
	for _, id := range first {
		if seen[id] != 1 {
			t.Errorf("%s, delivered before the cut, read %d times", id, seen[id])
		}
	}
	if dups := len(got) - len(all); dups > kafkaInFlight {
		t.Errorf("%d records written twice, more than the %d in flight", dups, kafkaInFlight)
	}
	t.Logf("%d records for %d events", len(got), len(all))

	eventually(t, "the circuit closed and every event processed", func() bool {
		st := stats(t, path)
		app := st.Sources["app"]
		return laneState(t, path).State == inbox.LaneHealthy &&
			app.ByStatus[inbox.StatusProcessed] == len(all) && app.ByStatus[inbox.StatusDead] == 0
	})
	retried := 0
	for _, id := range cut {
		out, err := command(t, "events", "show", "--json", "--config", path, id).Output()
		if err != nil {
			t.Fatalf("hookgate events show %s: %v", id, err)
		}
		var ev eventview.Detail
		if err := json.Unmarshal(out, &ev); err != nil || len(ev.Deliveries) != 1 {
			t.Fatalf("events show --json %s: %v\n%s", id, err, out)
		}
		d := ev.Deliveries[0]
		last := d.Log[len(d.Log)-1]
		if d.Status != inbox.DeliveryDelivered || last.Error != "" || !strings.HasPrefix(last.Body, "partition ") {
			t.Errorf("%s: delivery %+v, want delivered, the last attempt saying partition and offset", id, d)
		}
		if len(d.Log) > 1 && d.Log[0].Error != "" {
			retried++
		}
	}
	if retried == 0 {
		t.Errorf("no event sent during the cut has a failed attempt in its log")
	}
}

// TLS and SCRAM-SHA-512 through serve, the password in a file and the
// broker's CA in the system's roots (SSL_CERT_FILE, which serve inherits).
func TestKafkaTLSAndSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	const user, password = "hookgate", "kafka-secret-for-tests"
	cert, caFile := kafkaCert(t)
	t.Setenv("SSL_CERT_FILE", caFile)
	c := kafkatest.Start(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password), kfake.SeedTopics(1, "hooks"))
	p := startServe(t, "--config", kafkaConfig(t, "kafka://"+user+"@"+c.Addr+"?tls=1&sasl=scram-sha-512", password))
	sendAll(t, p, "evt_tls")
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	got := readKafka(t, c, func(es []kafkaEvent) bool { return len(es) > 0 },
		kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
	if len(got) != 1 || got[0].sent != "evt_tls" {
		t.Errorf("read %+v, want evt_tls", got)
	}
}

// kafkaCert makes a self-signed certificate for 127.0.0.1, its own CA,
// and writes it (PEM) to a file, whose path it returns with it.
func kafkaCert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, path
}
