package cli

import (
	"slices"
	"testing"

	"vibebrowser/manager/api"
	"vibebrowser/mux/sys/osuser"
)

// TestAgentEnvDropsSecrets: the launcher's environment reaches the agent less what vibe-browser agent sets
// itself and the manager's secrets, which a root shell that also runs serve may hold.
func TestAgentEnvDropsSecrets(t *testing.T) {
	launcher := []string{"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", "OPENAI_API_KEY=sk-agent",
		"VIBE_ZINIAO_PASSWORD=secret", "VIBE_SNAPSHOT_KEY=k", "VIBE_CLUSTER_CREDS=/etc/vibe/nats.creds",
		"SUDO_USER=alice", api.TaskTokenEnv + "=another-task's", "BU_NAME=x"}
	tok := api.TaskToken{Token: "t0k", TaskID: "task", BinDir: "/h/bin/s", GuardDir: "/h/guard",
		DownloadDir: "/h/downloads/s/task", AgentDir: "/h/agents/s"}
	env := agentEnv(launcher, "/h", tok, &osuser.User{Name: "vb-agent", UID: 4242, GID: 4242})
	tests := []struct {
		kv   string
		want bool
	}{
		{"LANG=C.UTF-8", true},
		{"OPENAI_API_KEY=sk-agent", true}, // the launcher's own, handed to its agent on purpose
		{"PATH=/h/bin/s:/h/guard:/usr/bin:/bin", true},
		{api.TaskTokenEnv + "=t0k", true},
		{"HOME=/h/agents/s", true},
		{"USER=vb-agent", true},
		{"VIBE_ZINIAO_PASSWORD=secret", false},
		{"VIBE_SNAPSHOT_KEY=k", false},
		{"VIBE_CLUSTER_CREDS=/etc/vibe/nats.creds", false},
		{"SUDO_USER=alice", false},
		{api.TaskTokenEnv + "=another-task's", false},
		{"BU_NAME=x", false},
		{"HOME=/root", false},
	}
	for _, tt := range tests {
		if got := slices.Contains(env, tt.kv); got != tt.want {
			t.Errorf("agentEnv holds %q = %v; want %v (env %q)", tt.kv, got, tt.want, env)
		}
	}
}
