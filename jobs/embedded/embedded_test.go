package embedded

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEmbeddedDamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, snapshotFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	if err == nil {
		t.Fatal("a damaged snapshot was accepted")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, snapshotFile)); string(data) != "{not json" {
		t.Fatal("the damaged snapshot was overwritten")
	}
	// The lock was released: the directory can be opened once the file is moved away.
	os.Remove(filepath.Join(dir, snapshotFile))
	e, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}
