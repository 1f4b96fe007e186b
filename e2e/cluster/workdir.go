package cluster

import (
	"os"
	"path/filepath"
)

// MakeWorkDir is os.MkdirTemp with an owner record: a run's scratch
// directory (built suites, up to 350 MB) that a later run or 'gpupool down'
// removes once the run that made it is gone, as a SIGKILL leaves it.
func MakeWorkDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := writeOwner(dir, false); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// SweepWorkDirs removes the scratch directories MakeWorkDir made with
// prefix whose run is gone, and returns them. Only a directory whose owner
// record names a dead process is removed: one without a record may belong
// to a live run of an older gpupool, or to one between making it and
// writing the record.
func SweepWorkDirs(prefix string) []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	var removed []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, ownerFile)); err != nil || ownerAlive(d) {
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, d)
		}
	}
	return removed
}
