package fileaccess

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Policy is the file access a script has: the folders (and single files)
// whose paths it may read and write. Paths are resolved (absolute, every
// symbolic link followed) before they are checked, so a link cannot lead
// out of an allowed folder.
type Policy struct {
	roots []root
}

type root struct {
	path string // resolved
	dir  bool   // a folder: everything below it; else this file only
	why  string // for error messages: "the script's folder", "--allow-path"
}

// ForScript is the default policy of a script: its folder and the current
// folder. A script given as source (file "" or not on disk) gets the
// current folder only.
func ForScript(file string) *Policy {
	p := &Policy{}
	if wd, err := os.Getwd(); err == nil {
		p.add(wd, true, "the current folder")
	}
	if file != "" {
		if abs, err := filepath.Abs(file); err == nil {
			if _, err := os.Stat(abs); err == nil {
				p.add(filepath.Dir(abs), true, "the script's folder")
			}
		}
	}
	return p
}

// Allow widens the policy to a folder (and everything below it) or a
// single file, which must exist; why names the setting for messages.
func (p *Policy) Allow(path, why string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return p.add(path, st.IsDir(), why)
}

// AllowNew widens the policy to one file that need not exist yet (the
// file of tgc train --save).
func (p *Policy) AllowNew(path, why string) error {
	resolved, err := resolveNew(path)
	if err != nil {
		return err
	}
	p.roots = append(p.roots, root{path: resolved, why: why})
	return nil
}

func (p *Policy) add(path string, dir bool, why string) error {
	resolved, err := resolve(path)
	if err != nil {
		return err
	}
	for _, r := range p.roots {
		if r.path == resolved && r.dir == dir {
			return nil // the script's folder is often the current one
		}
	}
	p.roots = append(p.roots, root{path: resolved, dir: dir, why: why})
	return nil
}

// Open opens a regular file the policy allows for reading.
func (p *Policy) Open(path string) (*os.File, error) {
	resolved, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if err := p.check(path, resolved); err != nil {
		return nil, err
	}
	return Open(resolved)
}

// CheckDir checks that the policy allows reading the folder path.
func (p *Policy) CheckDir(path string) (string, error) {
	resolved, err := resolve(path)
	if err != nil {
		return "", err
	}
	return resolved, p.check(path, resolved)
}

// CheckWrite checks that the policy allows writing path (which need not
// exist) and returns the file a write replaces.
func (p *Policy) CheckWrite(path string) (string, error) {
	target, err := writeTarget(path)
	if err != nil {
		return "", err
	}
	resolved, err := resolveNew(target)
	if err != nil {
		return "", err
	}
	return resolved, p.check(path, resolved)
}

// WriteFile writes data atomically to a path the policy allows.
func (p *Policy) WriteFile(path string, data []byte, perm os.FileMode) error {
	resolved, err := p.CheckWrite(path)
	if err != nil {
		return err
	}
	return WriteFile(resolved, data, perm)
}

// resolve makes an existing path absolute with every link followed.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// resolveNew resolves a path whose last element need not exist: its
// folder is resolved and the name joined.
func resolveNew(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	resolved := filepath.Join(dir, filepath.Base(abs))
	if r, err := filepath.EvalSymlinks(resolved); err == nil {
		resolved = r
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return resolved, nil
}

// ErrNotAllowed is the error of a path outside the policy.
var ErrNotAllowed = errors.New("outside the folders a script may access")

// check says whether resolved (what path resolves to) is inside a root.
func (p *Policy) check(path, resolved string) error {
	for _, r := range p.roots {
		if resolved == r.path || r.dir && inside(r.path, resolved) {
			return nil
		}
	}
	var allowed []string
	for _, r := range p.roots {
		allowed = append(allowed, fmt.Sprintf("%s %s", r.why, r.path))
	}
	what := path
	if abs, err := filepath.Abs(path); err != nil || abs != resolved {
		what = fmt.Sprintf("%s (resolves to %s)", path, resolved)
	}
	return fmt.Errorf("%s: %w (%s); allow a folder with --allow-path DIR or allow_path in tgc.yaml", what, ErrNotAllowed, strings.Join(allowed, ", "))
}

// inside says whether p is below the folder dir (both clean and absolute).
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
