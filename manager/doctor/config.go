package doctor

// config reports whether every VIBE_* knob is one serve accepts (config.FromEnv, serve's own reading).
func (m *machine) config() Check {
	if m.cfgErr != nil {
		return fail("config", m.cfgErr.Error()+" (the other checks use the defaults)",
			"correct or unset the variable; vibe-browser serve refuses to start until then")
	}
	return ok("config", "every VIBE_* variable set here is one vibe-browser serve accepts")
}
