package cluster

// AlsoTrusting is id trusting other's CA besides its own: a node of another cluster that trusts ours, so a
// test proves that our nodes refuse it, not merely that it refuses us.
func (id *Identity) AlsoTrusting(other *Identity) *Identity {
	cp := *id
	cp.pool = id.pool.Clone()
	cp.pool.AppendCertsFromPEM(other.caPEM)
	return &cp
}
