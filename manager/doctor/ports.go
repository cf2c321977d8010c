package doctor

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	psnet "github.com/shirou/gopsutil/v4/net"

	"vibebrowser/manager/api"
	"vibebrowser/mux/sys/procid"
)

// ports checks every port of the registry (one per store, and the web browser's): free, held by the running
// manager's mux, or taken by another process, which would keep that store's endpoint from ever answering.
func (m *machine) ports(ctx context.Context) []Check {
	type keyed struct{ key, slug string }
	var keys []keyed
	for _, s := range m.stores {
		keys = append(keys, keyed{s.ID, s.Slug})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].slug < keys[j].slug })
	if _, ok := m.registry[api.WebKey]; ok {
		keys = append(keys, keyed{api.WebKey, api.WebSlug})
	}
	var listeners map[int]int32 // port → pid, read once, when a port is in use
	var checks []Check
	for _, k := range keys {
		port := m.registry[k.key]
		name := "port:" + k.slug
		if port == 0 {
			checks = append(checks, ok(name, "no port allocated yet"))
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			checks = append(checks, ok(name, addr+" is free (the browser's mux is not running)"))
			continue
		}
		if listeners == nil {
			listeners = listeningPIDs(ctx)
		}
		checks = append(checks, m.portHolder(ctx, name, addr, k.key, port, listeners[port]))
	}
	return checks
}

// portHolder judges a port in use by pid (0: not visible to this user).
func (m *machine) portHolder(ctx context.Context, name, addr, key string, port int, pid int32) Check {
	if m.mgr != nil && (int(pid) == m.mgr.PID || pid == 0 && m.runningOn(key, port)) {
		return ok(name, fmt.Sprintf("%s is held by the manager's mux (pid %d)", addr, m.mgr.PID))
	}
	who := "a process this user cannot see (another user's)"
	if pid != 0 {
		who = fmt.Sprintf("pid %d (%s)", pid, command(ctx, pid))
	}
	return fail(name, addr+" is taken by "+who+", not by the manager: the endpoints printed for it cannot answer",
		"stop that process; otherwise the next start of this browser moves it to a new port and its cdp_http/cdp_ws "+
			"change (read them again with vibe-browser store show)")
}

// runningOn reports whether the manager says key's browser runs behind port.
func (m *machine) runningOn(key string, port int) bool {
	for _, b := range m.mgr.Browsers {
		if b.Key == key && b.Status == api.StatusRunning && b.ProxyPort == port {
			return true
		}
	}
	return false
}

// listeningPIDs maps each listening TCP port to its process, as far as this user may see.
func listeningPIDs(ctx context.Context) map[int]int32 {
	out := map[int]int32{}
	conns, err := psnet.ConnectionsWithContext(ctx, "tcp")
	if err != nil {
		return out
	}
	for _, c := range conns {
		if c.Status == "LISTEN" && out[int(c.Laddr.Port)] == 0 {
			out[int(c.Laddr.Port)] = c.Pid
		}
	}
	return out
}

// command names pid's program for a message.
func command(ctx context.Context, pid int32) string {
	info, err := procid.Inspect(ctx, int(pid))
	if err != nil || len(info.Cmdline) == 0 {
		return "unknown program"
	}
	cmd := strings.Join(strings.Fields(strings.Join(append([]string{filepath.Base(info.Cmdline[0])}, info.Cmdline[1:]...), " ")), " ")
	if len(cmd) > 80 {
		cmd = cmd[:77] + "..."
	}
	return cmd
}
