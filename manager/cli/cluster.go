package cli

import (
	"fmt"
	"net"
	"path/filepath"

	"vibebrowser/manager/cluster"
)

// ClusterCmd groups the commands that make a cluster of hosts (SPEC §19); they need no running manager.
type ClusterCmd struct {
	Init ClusterInitCmd `cmd:"" help:"Make a cluster's certificate authority and secret in DIR (once; DIR must stay private: its key signs every host)."`
	Join ClusterJoinCmd `cmd:"" help:"Give this home a host certificate from the cluster's CA in DIR, and print the knobs it then needs."`
}

// ClusterInitCmd makes a cluster's CA and secret.
type ClusterInitCmd struct {
	Dir string `arg:"" help:"Folder for the CA (made 0700; must not hold a CA already)." type:"path"`
}

// Run makes the CA.
func (c *ClusterInitCmd) Run(g *globals) error {
	if err := cluster.Init(c.Dir); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "made the cluster's CA and secret in %s; give each host its certificate with:\n"+
		"  vibe-browser --home HOME cluster join %s --host NAME --advertise HOST:PORT\n", c.Dir, c.Dir)
	return nil
}

// ClusterJoinCmd gives a home its host certificate.
type ClusterJoinCmd struct {
	Dir       string `arg:"" help:"The cluster's CA folder (made by cluster init)." type:"path"`
	Host      string `required:"" help:"This host's name in the cluster (letters, digits, '-' and '.'; up to 63)." placeholder:"NAME"`
	Advertise string `help:"Where other hosts reach this host's door; its host goes into the certificate." placeholder:"HOST:PORT"`
}

// Run joins the home and prints what the manager then needs.
func (c *ClusterJoinCmd) Run(g *globals) error {
	if err := cluster.Join(c.Dir, g.home, c.Host, c.Advertise); err != nil {
		return err
	}
	advertise, reach := c.Advertise, "HOST"
	if advertise == "" {
		advertise = "HOST:PORT"
	} else {
		reach, _, _ = net.SplitHostPort(advertise)
	}
	fmt.Fprintf(g.stdout, "%s joined the cluster; its certificate is in %s\n"+
		"run its manager (vibe-browser serve) with:\n"+
		"  VIBE_HOST=%s\n"+
		"  VIBE_ADVERTISE=%s\n"+
		"and either a NATS node inside the manager (three such hosts need nothing else):\n"+
		"  VIBE_CLUSTER_NODE=%s\n"+
		"  VIBE_CLUSTER_NODE_ROUTE=%s\n"+
		"  VIBE_CLUSTER_ROUTES=nats-route://OTHER1:6222,nats-route://OTHER2:6222\n"+
		"or an existing NATS cluster:\n"+
		"  VIBE_CLUSTER=nats://SERVER1:4222,nats://SERVER2:4222 VIBE_CLUSTER_CREDS=/path/to.creds VIBE_CLUSTER_CA=/path/to/ca.pem\n",
		c.Host, filepath.Join(g.home, cluster.HomeDir), c.Host, advertise,
		net.JoinHostPort(reach, "4222"), net.JoinHostPort(reach, "6222"))
	return nil
}
