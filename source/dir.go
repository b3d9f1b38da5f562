package source

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentnas/nas/chunk"
)

// Dir is a folder on the gateway's host as a Source. It is opened through
// os.Root, so no key, "..", absolute path or symbolic link leads outside
// it, and it is only ever read.
//
// A file with more than one hard link is never attached or read: its
// other names may lie outside the folder (a link made to /etc/shadow from
// inside it), which os.Root cannot see. List skips such files; Stat and
// reads refuse them (ErrEscape).
//
// A folder keeps no versions, so an object's pin is derived from its
// identity and state (inode, size, modification time): a file changed in
// place after attaching reads as drifted (ErrChanged). A write that keeps
// all three (same size, within the file system's timestamp resolution) is
// not detected: a live folder is not frozen.
type Dir struct {
	path string
	root *os.Root
}

var _ Source = (*Dir)(nil)

// OpenDir opens the folder at path, which must be absolute.
func OpenDir(path string) (*Dir, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("folder %q: the path must be absolute: %w", path, ErrInvalid)
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("folder %q: %v: %w", path, err, ErrInvalid)
	}
	return &Dir{path: path, root: root}, nil
}

// Close releases the folder.
func (d *Dir) Close() error { return d.root.Close() }

// dirETag derives the pin of a folder's file. It ends in "-1", which S3
// clients read as "not an MD5 of the content".
func dirETag(fi fs.FileInfo) string {
	var b [32]byte
	binary.BigEndian.PutUint64(b[0:], fileID(fi))
	binary.BigEndian.PutUint64(b[8:], uint64(fi.Size()))
	binary.BigEndian.PutUint64(b[16:], uint64(fi.ModTime().UnixNano()))
	h := chunk.Sum(b[:24])
	return hex.EncodeToString(h[:16]) + "-1"
}

// checkKey refuses keys that are not plain relative paths; os.Root would
// refuse them too, this only makes the error clear.
func checkKey(key string) error {
	if !filepath.IsLocal(key) || strings.Contains(key, `\`) {
		return fmt.Errorf("key %q: %w", key, ErrEscape)
	}
	return nil
}

// fsError maps a file-system error about key.
func fsError(key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("file %s: gone from the folder: %w", key, ErrChanged)
	case strings.Contains(err.Error(), "escapes"):
		return fmt.Errorf("file %s: %w", key, ErrEscape)
	}
	return fmt.Errorf("file %s: %v: %w", key, err, ErrUnavailable)
}

// List implements Source. It walks the folder in the byte order of the
// keys it yields (a directory "a" sorts as "a/"). Symbolic links count
// when they resolve, inside the folder, to a regular file; links to
// directories are not followed (no loops); other file types are skipped.
func (d *Dir) List(ctx context.Context, after string, fn func(Object) error) error {
	return d.walk(ctx, "", after, fn)
}

func (d *Dir) walk(ctx context.Context, dir, after string, fn func(Object) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := "."
	if dir != "" {
		name = strings.TrimSuffix(dir, "/")
	}
	f, err := d.root.Open(name)
	if err != nil {
		return fsError(name, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fsError(name, err)
	}
	type item struct {
		key string // directories end in "/"
		fi  fs.FileInfo
	}
	items := make([]item, 0, len(ents))
	for _, e := range ents {
		key := dir + e.Name()
		switch t := e.Type(); {
		case t.IsDir():
			items = append(items, item{key: key + "/"})
		case t.IsRegular():
			fi, err := e.Info()
			if err == nil && linkCount(fi) == 1 {
				items = append(items, item{key: key, fi: fi})
			}
		case t&fs.ModeSymlink != 0:
			// Stat through the root: a link leading outside fails.
			fi, err := d.root.Stat(key)
			if err == nil && fi.Mode().IsRegular() && linkCount(fi) == 1 {
				items = append(items, item{key: key, fi: fi})
			}
		}
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.key, b.key) })
	for _, it := range items {
		if it.fi == nil {
			// Every key under it.key sorts before after: skip the subtree.
			if after >= it.key && !strings.HasPrefix(after, it.key) {
				continue
			}
			if err := d.walk(ctx, it.key, after, fn); err != nil {
				return err
			}
			continue
		}
		if it.key <= after {
			continue
		}
		o := Object{Key: it.key, Size: it.fi.Size(), ETag: dirETag(it.fi), ModTime: it.fi.ModTime()}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Stat implements Source.
func (d *Dir) Stat(ctx context.Context, key string) (Object, error) {
	if err := checkKey(key); err != nil {
		return Object{}, err
	}
	fi, err := d.root.Stat(key)
	if err != nil {
		return Object{}, fsError(key, err)
	}
	if !fi.Mode().IsRegular() {
		return Object{}, fmt.Errorf("file %s: no longer a regular file: %w", key, ErrChanged)
	}
	if linkCount(fi) != 1 {
		return Object{}, fmt.Errorf("file %s: has %d hard links, which may lie outside the folder: %w", key, linkCount(fi), ErrEscape)
	}
	return Object{Key: key, Size: fi.Size(), ETag: dirETag(fi), ModTime: fi.ModTime()}, nil
}

// ReadRange implements Source. The file is checked against the pin when
// opened and again at the end of the range, so a file rewritten during
// the read fails with ErrChanged instead of mixing old and new bytes.
func (d *Dir) ReadRange(ctx context.Context, p Pin, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off > p.Size || n > p.Size-off {
		return nil, fmt.Errorf("read %s [%d,+%d): %w", p, off, n, ErrInvalid)
	}
	if err := checkKey(p.Key); err != nil {
		return nil, err
	}
	f, err := d.root.Open(p.Key)
	if err != nil {
		return nil, fsError(p.Key, err)
	}
	if err := checkPinned(f, p); err != nil {
		f.Close()
		return nil, err
	}
	b := &dirBody{f: f, r: io.NewSectionReader(f, off, n), p: p}
	return newVerifier(b, n, p.String()), nil
}

func checkPinned(f *os.File, p Pin) error {
	fi, err := f.Stat()
	if err != nil {
		return fsError(p.Key, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("file %s: no longer a regular file: %w", p.Key, ErrChanged)
	}
	if linkCount(fi) != 1 {
		return fmt.Errorf("file %s: has %d hard links, which may lie outside the folder: %w", p.Key, linkCount(fi), ErrEscape)
	}
	if fi.Size() != p.Size || dirETag(fi) != p.ETag {
		return fmt.Errorf("file %s: changed since it was pinned (size %d, now %d): %w", p.Key, p.Size, fi.Size(), ErrChanged)
	}
	return nil
}

// dirBody reads a file's range and re-checks the pin at its end.
type dirBody struct {
	f *os.File
	r io.Reader
	p Pin
}

func (b *dirBody) Read(buf []byte) (int, error) {
	n, err := b.r.Read(buf)
	if err == io.EOF {
		if cerr := checkPinned(b.f, b.p); cerr != nil {
			return n, cerr
		}
	} else if err != nil {
		err = fsError(b.p.Key, err)
	}
	return n, err
}

func (b *dirBody) Close() error { return b.f.Close() }
