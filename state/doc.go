// Package state keeps the manager's durable state in SQLite: stores, browsers, tasks, ports, tab ownership and task timelines.
package state
