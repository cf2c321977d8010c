package cluster_test

import (
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
)

// The cluster's logins are the fleet's copies as they are: the daemon passes a *Logins as
// browsers.Config.LoginCopies, with no adapter between them.
var _ browsers.LoginCopies = (*cluster.Logins)(nil)
