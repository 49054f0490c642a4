package server

// Linked so that serve can deliver to kafka:// destinations.
import _ "github.com/hookgate/hookgate/internal/deliver/kafka"
