package sinks

import (
	"slices"
	"testing"

	"cx/internal/config"
	"cx/internal/sink"
)

// Every sink config knows is built, by the name config uses.
func TestConfiguredBuildsEverySinkConfigNames(t *testing.T) {
	got := Configured(config.Config{}, func(string) (string, bool) { return "", false })
	var names []string
	for name, s := range got {
		if s == nil {
			t.Errorf("sink %s is nil", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"exec", "local", "openviking"}) {
		t.Errorf("sinks %v", names)
	}
	if _, ok := got["openviking"].(sink.Checker); !ok {
		t.Error("the OpenViking sink does not check itself for doctor")
	}
}
