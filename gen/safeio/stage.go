package safeio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// StagePrefix names stage folders; the generator's walks skip them.
const StagePrefix = ".convtgen-stage-"

const journalName = "journal.json"

// Commit replaces a set of generated files together: writes (path to new
// bytes) and removes, slash-separated paths under root, each either absent
// or a regular file that owned accepts, reached through real folders.
//
// The new files are first written and synced into a stage folder under
// root/stageIn (the same filesystem as the targets); a journal listing
// every change is then synced, each old file is moved into the stage and
// each new one renamed into place, and removing the journal commits the
// set. What this guarantees:
//   - every target is at all times whole, its old bytes or its new ones;
//   - a failure before the commit point rolls every change back before
//     Commit returns, and leaves no stage behind;
//   - a kill leaves the stage with its journal (or, before the journal, a
//     stage without one); Recover, which the next run calls first, rolls
//     the targets back to the previous set and removes the stage.
//
// Between a kill and the next run the targets may be a mix of old and new
// files; Pending tells a read-only check about it. One run at a time: two
// concurrent runs would each take the other's stage for a stale one.
func Commit(root, stageIn string, writes map[string][]byte, removes []string, owned func([]byte) bool) (err error) {
	var entries []entry
	for rel := range writes {
		entries = append(entries, entry{Path: rel})
	}
	for _, rel := range removes {
		if _, dup := writes[rel]; dup {
			return fmt.Errorf("%s: both written and removed", rel)
		}
		entries = append(entries, entry{Path: rel, Remove: true})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	var conflicts Conflicts
	for i, e := range entries {
		_, exists, err := ReadOwned(root, e.Path, owned)
		var c Conflict
		switch {
		case errors.As(err, &c):
			conflicts = append(conflicts, c)
		case err != nil:
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		entries[i].HadOld = exists
	}
	if len(conflicts) > 0 {
		return conflicts
	}
	if len(entries) == 0 {
		return nil
	}

	if err := mkdirs(root, stageIn+"/x"); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Join(root, filepath.FromSlash(stageIn)), StagePrefix)
	if err != nil {
		return err
	}
	journaled, committed := false, false
	defer func() {
		if errors.Is(err, errKilled) {
			return // a test's simulated kill: leave everything as a kill would
		}
		if journaled && !committed {
			if rerr := rollback(root, stage, entries, owned); rerr != nil {
				err = errors.Join(err, fmt.Errorf("rolling back: %w (the stage %s is kept for the next run)", rerr, stage))
				return
			}
		}
		if rerr := os.RemoveAll(stage); rerr != nil && err == nil {
			err = rerr
		}
	}()
	for _, e := range entries {
		if e.Remove {
			continue
		}
		if err := writeSynced(filepath.Join(stage, "new", filepath.FromSlash(e.Path)), writes[e.Path]); err != nil {
			return err
		}
	}
	journal, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(stage, journalName+".tmp"), journal); err != nil {
		return err
	}
	if err := rename(filepath.Join(stage, journalName+".tmp"), filepath.Join(stage, journalName)); err != nil {
		return err
	}
	journaled = true
	if err := syncDir(stage); err != nil {
		return err
	}

	dirs := map[string]bool{}
	for _, e := range entries {
		target := filepath.Join(root, filepath.FromSlash(e.Path))
		if e.HadOld {
			// Still the generator's file, reached the same safe way.
			if _, exists, err := ReadOwned(root, e.Path, owned); err != nil || !exists {
				return errors.Join(fmt.Errorf("%s: changed during the run", e.Path), err)
			}
			if err := mkdirs(stage, "old/"+e.Path); err != nil {
				return err
			}
			if err := rename(target, filepath.Join(stage, "old", filepath.FromSlash(e.Path))); err != nil {
				return err
			}
		}
		if !e.Remove {
			if err := mkdirs(root, e.Path); err != nil {
				return err
			}
			if err := rename(filepath.Join(stage, "new", filepath.FromSlash(e.Path)), target); err != nil {
				return err
			}
		}
		dirs[filepath.Dir(target)] = true
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	// The commit point: without its journal a stage is only litter.
	if err := os.Remove(filepath.Join(stage, journalName)); err != nil {
		return err
	}
	committed = true
	// A removed file's folder goes too once nothing else is in it.
	for _, e := range entries {
		if e.Remove {
			_ = os.Remove(filepath.Dir(filepath.Join(root, filepath.FromSlash(e.Path))))
		}
	}
	return nil
}

// entry is one change in the journal; HadOld tells whether the target
// existed before (its old bytes then wait in the stage's old/ while the
// commit runs).
type entry struct {
	Path   string
	Remove bool `json:",omitempty"`
	HadOld bool `json:",omitempty"`
}

// rollback puts back every target of entries as it was before the commit.
// It may be run again after being interrupted: an old file still in the
// stage goes back, a new file whose staged copy is gone was renamed into
// place and is removed.
func rollback(root, stage string, entries []entry, owned func([]byte) bool) error {
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		target := filepath.Join(root, filepath.FromSlash(e.Path))
		if e.HadOld {
			old := filepath.Join(stage, "old", filepath.FromSlash(e.Path))
			if _, err := os.Lstat(old); err == nil {
				errs = append(errs, os.Rename(old, target))
			}
			continue
		}
		if e.Remove {
			continue
		}
		if _, err := os.Lstat(filepath.Join(stage, "new", filepath.FromSlash(e.Path))); errors.Is(err, fs.ErrNotExist) {
			// Renamed into place: the file was not there before.
			if _, exists, err := ReadOwned(root, e.Path, owned); err == nil && exists {
				errs = append(errs, os.Remove(target))
			}
		}
		// A folder made for it goes too when left empty.
		_ = os.Remove(filepath.Dir(target))
	}
	return errors.Join(errs...)
}

// Stages lists the stage folders left under root/stageIn by earlier runs.
func Stages(root, stageIn string) ([]string, error) {
	dir := filepath.Join(root, filepath.FromSlash(stageIn))
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, nil // no folder (or not one: the writes refuse it)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var stages []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), StagePrefix) {
			stages = append(stages, stageIn+"/"+e.Name())
		}
	}
	return stages, nil
}

// Recover rolls back the changes of every run that was killed while
// committing (its stage still has a journal) and removes every stage
// folder, so the targets are the set from before that run.
func Recover(root, stageIn string, owned func([]byte) bool) error {
	stages, err := Stages(root, stageIn)
	if err != nil {
		return err
	}
	for _, rel := range stages {
		stage := filepath.Join(root, filepath.FromSlash(rel))
		if fi, err := os.Lstat(stage); err == nil && fi.IsDir() {
			data, err := ReadRegular(filepath.Join(stage, journalName), MaxSpecSize*16)
			if err == nil {
				var entries []entry
				if err := json.Unmarshal(data, &entries); err != nil {
					return fmt.Errorf("%s: unreadable journal of an interrupted run: %w", rel, err)
				}
				for _, e := range entries {
					if err := checkRel(e.Path); err != nil {
						return fmt.Errorf("%s: journal: %w", rel, err)
					}
				}
				if err := rollback(root, stage, entries, owned); err != nil {
					return fmt.Errorf("%s: rolling back an interrupted run: %w", rel, err)
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s/%s: %w", rel, journalName, err)
			}
		}
		if err := os.RemoveAll(stage); err != nil {
			return err
		}
	}
	return nil
}

// mkdirs makes the folders on the way to rel's file under root one at a
// time, so none is made (or written) through a symbolic link.
func mkdirs(root, rel string) error {
	parts := strings.Split(rel, "/")
	p := root
	for i, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return Conflict{strings.Join(parts[:i+1], "/"), fmt.Sprintf("is %s, not a folder: convtgen writes nothing through it (remove it)", Kind(fi.Mode()))}
		}
	}
	return nil
}

// writeSynced creates path (its folders inside the stage included) and
// syncs its bytes to disk.
func writeSynced(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := hook("write", path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func rename(from, to string) error {
	if err := hook("rename", to); err != nil {
		return err
	}
	return os.Rename(from, to)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

// testHook, when set (by tests), runs before every staged write and every
// rename; its error fails that step. errKilled makes Commit stop dead, as
// a killed process would.
var testHook func(op, path string) error

var errKilled = errors.New("killed (simulated)")

func hook(op, path string) error {
	if testHook == nil {
		return nil
	}
	return testHook(op, path)
}
