package hookserver

import (
	"cx/internal/proc"
)

// startHost starts CX_HOME's background sweeper to be the hook host
// (`cx ctl sweep --background --hooks`: no sweep first); a variable so
// in-process tests start none.
var startHost = func() error { return proc.StartDetached("ctl", "sweep", "--background", "--hooks") }
