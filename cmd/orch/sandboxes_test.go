package main

import (
	"path/filepath"
	"testing"
)

func TestInstanceID(t *testing.T) {
	base := instanceID("redis://orch:secret@redis:6379/0", "")
	for _, c := range []struct {
		name  string
		id    string
		equal bool
	}{
		{"another password", instanceID("redis://orch:other@redis:6379/0?dial_timeout=3s", ""), true},
		{"another state dir", instanceID("redis://orch:secret@redis:6379/0", "/elsewhere"), true},
		{"another database", instanceID("redis://orch:secret@redis:6379/1", ""), false},
		{"another host", instanceID("redis://orch:secret@redis2:6379/0", ""), false},
		{"the embedded store", instanceID("", "/srv/orch/state"), false},
	} {
		if (c.id == base) != c.equal {
			t.Errorf("%s: %s against %s, want equal %v", c.name, c.id, base, c.equal)
		}
	}
	rel, abs := instanceID("", ".orch"), instanceID("", mustAbs(t, ".orch"))
	if rel != abs || rel == instanceID("", "/other/.orch") {
		t.Errorf("the embedded store's id is not that of its absolute directory: %s %s", rel, abs)
	}
	if !instancePattern.MatchString(base) {
		t.Errorf("derived id %q is not a valid ORCH_INSTANCE", base)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
