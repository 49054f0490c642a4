package server

// Linked so that serve can deliver to nats:// and tls:// destinations.
import _ "github.com/hookgate/hookgate/internal/deliver/natsjs"
