// Package health is the shape of one `cx ctl doctor` finding, shared by
// the packages that check their own part (hooks, the ledger, each sink).
package health

// Check is one finding.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorPrefix marks the session ids of `cx ctl doctor`'s probes (a hook
// fired the way Codex fires it, a sink's session route): the hook handler
// answers them and records nothing.
const DoctorPrefix = "cx-doctor-"
