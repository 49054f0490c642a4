// Package intake is the front door of the gateway: the HTTP handler that
// authenticates, splits and keys each delivery, and the group committer that
// makes the events of many concurrent requests durable in one transaction
// before any of them is acknowledged.
package intake
