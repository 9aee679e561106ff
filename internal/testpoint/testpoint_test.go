package testpoint

import (
	"testing"
	"time"
)

func TestSettings(t *testing.T) {
	t.Setenv(Lease, "150ms")
	t.Setenv(HookBacklog, "4096")
	t.Setenv(Backoff, "-1s")
	t.Setenv("CX_TEST_OFF", "watchman,pdeathsig")
	if d, ok := Duration(Lease); !ok || d != 150*time.Millisecond {
		t.Errorf("Duration: %v %v", d, ok)
	}
	if _, ok := Duration(Backoff); ok {
		t.Error("a negative duration is taken")
	}
	if _, ok := Duration(Clock); ok {
		t.Error("an unset duration is taken")
	}
	if n, ok := Int(HookBacklog); !ok || n != 4096 {
		t.Errorf("Int: %v %v", n, ok)
	}
	if !Off("pdeathsig") || Off("pdeath") || Off("") {
		t.Error("Off does not read the comma-separated list")
	}
}

func TestPanicOnNamesItsPoint(t *testing.T) {
	t.Setenv("CX_TEST_PANIC_AT", "here")
	Panic("elsewhere") // not named: nothing
	defer func() {
		if r := recover(); r != "test panic at here" {
			t.Errorf("recovered %v", r)
		}
	}()
	Panic("here")
	t.Error("no panic at the named point")
}

func TestNowIsUTC(t *testing.T) {
	if Now().Location() != time.UTC {
		t.Error("Now is not in UTC")
	}
}
