package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"vibebrowser/manager/service"
)

// ServiceCmd installs or removes the service that runs `vibe-browser serve`.
type ServiceCmd struct {
	Install   ServiceInstallCmd   `cmd:"" help:"Write the systemd unit (or launchd plist) and print how to start it."`
	Uninstall ServiceUninstallCmd `cmd:"" help:"Remove the systemd unit (or launchd plist) and print how to stop it."`
}

// ServiceInstallCmd writes the service file.
type ServiceInstallCmd struct {
	User  bool `help:"A per-user service (systemd --user, in $XDG_CONFIG_HOME/systemd/user) instead of a system one."`
	Force bool `help:"Install even when this binary sits in a git checkout or a temporary directory."`
}

// Run writes the unit for this vibe-browser binary (its installed path, through symlinks) and home. The
// service gets this shell's PATH (so it finds browser-use and Chromium as you do) and every VIBE_* knob set
// now. A binary in a checkout or a temporary directory is refused unless forced: the service would run
// whatever the next build leaves there, or nothing once the directory is cleaned.
func (c *ServiceInstallCmd) Run(g *globals) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return err
	}
	if why := service.Unsettled(exe, mainModule()); why != "" && !c.Force {
		bin := "~/.local/bin"
		if os.Getuid() == 0 {
			bin = "/usr/local/bin"
		}
		return fmt.Errorf("service install: %s; run go tool task install in the checkout (it installs both binaries into %s, "+
			"or PREFIX=DIR into DIR/bin), then that vibe-browser's service install; or pass --force to use this one", why, bin)
	}
	env := map[string]string{"PATH": os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "VIBE_") && name != "VIBE_HOME" {
			env[name] = value
		}
	}
	_, err = service.Install(service.Options{Exe: exe, Home: g.home, User: c.User, Env: env}, g.stdout)
	return err
}

// ServiceUninstallCmd removes the service file.
type ServiceUninstallCmd struct {
	User bool `help:"The per-user service."`
}

// Run removes the unit.
func (c *ServiceUninstallCmd) Run(g *globals) error {
	return service.Uninstall(c.User, g.stdout)
}

// mainModule is this binary's module path (go.mod's), which names the checkout it may have been built in.
func mainModule() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path != "" {
		return bi.Main.Path
	}
	return "vibebrowser"
}
