package doctor

// Status is a check's outcome.
type Status string

// The outcomes, from good to bad. Only Fail makes `vibe-browser doctor` exit 1.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one line of the report. Its JSON form is part of the CLI's contract: the names of the fields and
// of the checks are stable, and every field is always present.
type Check struct {
	Name   string `json:"name"`   // "chromium", "browser-use", …, or "port:<slug>" and "ziniao:<slug>" per store
	Status Status `json:"status"` // ok, warn or fail
	Detail string `json:"detail"` // what was found, or the problem
	Fix    string `json:"fix"`    // what to do about a problem; "" when there is none
}

// Failed counts the checks that failed.
func Failed(checks []Check) int {
	n := 0
	for _, c := range checks {
		if c.Status == Fail {
			n++
		}
	}
	return n
}

func ok(name, detail string) Check { return Check{Name: name, Status: OK, Detail: detail} }

func warn(name, detail, fix string) Check {
	return Check{Name: name, Status: Warn, Detail: detail, Fix: fix}
}

func fail(name, detail, fix string) Check {
	return Check{Name: name, Status: Fail, Detail: detail, Fix: fix}
}
