package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ShimFormat is the version of the shim/config contract. Bump it whenever either side changes meaning; the
// manager wipes wrappers of older formats at boot and a shim refuses a config newer than itself.
const ShimFormat = 1

// ShimConfigName is the file name of the config the manager writes beside each shim copy.
const ShimConfigName = "browser-use.json"

// Kinds of shim.
const (
	ShimKindStore = "store" // a store's wrapper: bin/<slug>/browser-use
	ShimKindWeb   = "web"   // the store-less web browser's wrapper: bin/_web/browser-use
	ShimKindGuard = "guard" // bin/_guard/browser-use: always refuses
)

// GuardDir is the directory under bin/ of the guard wrapper; the manager writes it and `vibe-browser env` puts
// it on PATH behind the store's wrapper.
const GuardDir = "_guard"

// Defaults applied to zero values of the shim config's bounds. DefaultCallTimeoutS is also the default of
// the manager's VIBE_CALL_TIMEOUT_S, which it bakes into every config.
const (
	DefaultCallTimeoutS   = 120
	DefaultKillGraceS     = 5
	DefaultReloadTimeoutS = 30
	DefaultEnsureTimeoutS = 240
)

// ShimConfig is baked by the manager beside each shim copy. Every field is checked when read: unknown
// fields, a missing or newer format and missing required paths are errors.
type ShimConfig struct {
	Format int    `json:"format"`
	Kind   string `json:"kind"`
	// StoreID and Slug name the store (ShimKindStore only).
	StoreID string `json:"store_id,omitempty"`
	Slug    string `json:"slug,omitempty"`
	// ManagerSocket is the manager's unix socket (absolute).
	ManagerSocket string `json:"manager_socket,omitempty"`
	// AgentSocket is the agents' socket (SPEC §14), which the shim calls when VIBE_TASK_TOKEN is set; empty
	// in a config an older manager wrote, where it lies beside ManagerSocket.
	AgentSocket string `json:"agent_socket,omitempty"`
	// RealBU is the absolute path of the real browser-use CLI, resolved at generation.
	RealBU string `json:"real_bu,omitempty"`
	// RuntimeDir and TmpDir become BH_RUNTIME_DIR and BH_TMP_DIR; the wedge counters live in RuntimeDir.
	RuntimeDir string `json:"runtime_dir,omitempty"`
	TmpDir     string `json:"tmp_dir,omitempty"`
	// WorkerSlots bounds --worker N; 0 disables the flag.
	WorkerSlots int `json:"worker_slots"`
	// CallTimeoutS bounds one call of the real CLI (0: DefaultCallTimeoutS).
	CallTimeoutS int `json:"call_timeout_s,omitempty"`
	// KillGraceS is the wait between SIGTERM and SIGKILL of a timed-out call (0: DefaultKillGraceS).
	KillGraceS int `json:"kill_grace_s,omitempty"`
	// ReloadTimeoutS bounds the `--reload` after a first timeout (0: DefaultReloadTimeoutS).
	ReloadTimeoutS int `json:"reload_timeout_s,omitempty"`
	// EnsureTimeoutS bounds the manager's ensure call, which may start a browser (0: DefaultEnsureTimeoutS).
	EnsureTimeoutS int `json:"ensure_timeout_s,omitempty"`
}

// ErrNoShimConfig means no config file sits beside the shim: it was copied by hand or the manager never
// generated this wrapper. It is distinct from a config that exists but is broken.
var ErrNoShimConfig = errors.New("no config beside the shim")

// LoadShimConfig reads and validates the shim config at path.
func LoadShimConfig(path string) (*ShimConfig, error) {
	data, err := readSmallFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoShimConfig)
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseShimConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config %s is broken: %w", path, err)
	}
	return cfg, nil
}

// maxShimConfig bounds the config file: the manager writes a few hundred bytes.
const maxShimConfig = 1 << 20

// readSmallFile reads path with plain system calls: os.ReadFile's file would join the runtime's poller,
// which on the shim's first file costs it five more system calls (an epoll set made, tried and refused).
func readSmallFile(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	data := make([]byte, 0, 1024)
	for {
		if len(data) > maxShimConfig {
			return nil, fmt.Errorf("%s is over %d bytes", path, maxShimConfig)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := syscall.Read(fd, data[len(data):cap(data)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return data, nil
		}
		data = data[:len(data)+n]
	}
}

// ParseShimConfig decodes and validates a shim config strictly: one JSON object, field names matched as
// encoding/json matches them, no unknown field and nothing after it.
func ParseShimConfig(data []byte) (*ShimConfig, error) {
	var cfg ShimConfig
	if err := cfg.decode(data); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// decode reads the config without encoding/json (litejson.go): it runs on every agent call.
func (c *ShimConfig) decode(data []byte) error {
	r := &jsonReader{data: string(data)}
	strs := []struct {
		name string
		dst  *string
	}{{"kind", &c.Kind}, {"store_id", &c.StoreID}, {"slug", &c.Slug}, {"manager_socket", &c.ManagerSocket},
		{"agent_socket", &c.AgentSocket}, {"real_bu", &c.RealBU}, {"runtime_dir", &c.RuntimeDir}, {"tmp_dir", &c.TmpDir}}
	ints := []struct {
		name string
		dst  *int
	}{{"format", &c.Format}, {"worker_slots", &c.WorkerSlots}, {"call_timeout_s", &c.CallTimeoutS},
		{"kill_grace_s", &c.KillGraceS}, {"reload_timeout_s", &c.ReloadTimeoutS}, {"ensure_timeout_s", &c.EnsureTimeoutS}}
	err := r.object(func(name string) error {
		// encoding/json takes a field whose name differs only in case, and these differ in more.
		for _, f := range strs {
			if strings.EqualFold(name, f.name) {
				return r.stringField(f.dst)
			}
		}
		for _, f := range ints {
			if strings.EqualFold(name, f.name) {
				return r.intField(f.dst)
			}
		}
		return fmt.Errorf("json: unknown field %q", name)
	})
	if err != nil {
		return err
	}
	if err := r.end(); err != nil {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// Validate checks the fields a shim of this kind needs.
func (c *ShimConfig) Validate() error {
	switch {
	case c.Format == 0:
		return errors.New("missing format")
	case c.Format < 0:
		return fmt.Errorf("format %d is not a version", c.Format)
	case c.Format > ShimFormat:
		return fmt.Errorf("format %d is newer than this shim (format %d); reinstall vibe-browser", c.Format, ShimFormat)
	}
	switch c.Kind {
	case ShimKindGuard:
		return nil
	case ShimKindStore:
		if c.StoreID == "" || c.Slug == "" {
			return errors.New("a store shim needs store_id and slug")
		}
	case ShimKindWeb:
	default:
		return fmt.Errorf("kind %q is not one of store, web, guard", c.Kind)
	}
	for name, p := range map[string]string{"manager_socket": c.ManagerSocket, "real_bu": c.RealBU,
		"runtime_dir": c.RuntimeDir, "tmp_dir": c.TmpDir} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%s must be an absolute path, got %q", name, p)
		}
	}
	if c.WorkerSlots < 0 || c.WorkerSlots > 99 {
		return fmt.Errorf("worker_slots %d is outside 0..99", c.WorkerSlots)
	}
	for name, v := range map[string]int{"call_timeout_s": c.CallTimeoutS, "kill_grace_s": c.KillGraceS,
		"reload_timeout_s": c.ReloadTimeoutS, "ensure_timeout_s": c.EnsureTimeoutS} {
		if v < 0 {
			return fmt.Errorf("%s %d is negative", name, v)
		}
	}
	return nil
}

// CallTimeout is CallTimeoutS with its default applied.
func (c *ShimConfig) CallTimeout() time.Duration { return seconds(c.CallTimeoutS, DefaultCallTimeoutS) }

// KillGrace is KillGraceS with its default applied.
func (c *ShimConfig) KillGrace() time.Duration { return seconds(c.KillGraceS, DefaultKillGraceS) }

// ReloadTimeout is ReloadTimeoutS with its default applied.
func (c *ShimConfig) ReloadTimeout() time.Duration {
	return seconds(c.ReloadTimeoutS, DefaultReloadTimeoutS)
}

// EnsureTimeout is EnsureTimeoutS with its default applied.
func (c *ShimConfig) EnsureTimeout() time.Duration {
	return seconds(c.EnsureTimeoutS, DefaultEnsureTimeoutS)
}

func seconds(v, def int) time.Duration {
	if v == 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// AgentSocketPath is the agents' socket a shim calls with a task token.
func (c *ShimConfig) AgentSocketPath() string {
	if c.AgentSocket != "" {
		return c.AgentSocket
	}
	return filepath.Join(filepath.Dir(c.ManagerSocket), filepath.Base(AgentSocketRel))
}

// Client is the manager client a shim call uses: the agents' socket with the task's token when it has one
// (SPEC §14), else the manager's socket.
func (c *ShimConfig) Client(token string) *Client {
	if token != "" {
		return &Client{Socket: c.AgentSocketPath(), Token: token}
	}
	return NewClient(c.ManagerSocket)
}
