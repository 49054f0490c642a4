package server

// Linked so that serve can deliver to amqp:// and amqps:// destinations.
import _ "github.com/hookgate/hookgate/internal/deliver/rabbitmq"
