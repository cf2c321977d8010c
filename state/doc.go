// Package state keeps the manager's durable state in SQLite: stores, browsers, tasks, ports and tab ownership.
package state
