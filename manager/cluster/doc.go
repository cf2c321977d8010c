// Package cluster runs a manager as one host of many on NATS JetStream (SPEC §19): the cluster's certificates,
// its engine (an embedded NATS node or an existing cluster), and its shared state (hosts, placement, leases,
// the stores' logins).
package cluster
