// Package safetext makes text that came from outside orch safe to keep and to show: it takes out the credentials it
// holds (Redactor, by value) and those of well-known kinds (Redact, by pattern), and bounds what it keeps (Bound).
// Everything an agent, a person or a remote service says passes through it before orch stores, logs or posts it.
package safetext
