package server

// NATS JetStream destinations (nats://, tls://) can be delivered to.
import _ "github.com/hookgate/hookgate/internal/deliver/natsjs"
