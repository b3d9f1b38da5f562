package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	nasclient "github.com/agentnas/nas/client"
)

// partSize is the part of a multipart upload; files of at least this
// size go up in parts. S3 allows at most maxParts parts and maxObject
// bytes, so a file over maxParts*partSize (160 GiB) goes up in larger
// parts (partSizeFor).
const (
	partSize  = 16 << 20
	maxParts  = 10000
	maxObject = 5 << 40
)

// partSizeFor is the part size for a file of size bytes: partSize, or the
// smallest whole MiB that keeps the upload within maxParts parts.
func partSizeFor(size int64) int64 {
	ps := max(int64(partSize), (size+maxParts-1)/maxParts)
	return (ps + 1<<20 - 1) &^ (1<<20 - 1)
}

// fileResult is one line of the --json output (NDJSON) of cp and mirror:
// one file or object copied, or one deleted.
type fileResult struct {
	Action    string `json:"action"` // upload, download, copy or delete
	Src       string `json:"src,omitempty"`
	Dst       string `json:"dst"`
	Size      int64  `json:"size"`
	ETag      string `json:"etag,omitempty"`
	Multipart bool   `json:"multipart,omitempty"`
	DryRun    bool   `json:"dry_run,omitempty"`
	Error     string `json:"error,omitempty"`
}

// job is one transfer of a plan: run does it, counting its bytes on p.
type job struct {
	res fileResult
	run func(ctx context.Context, p *progress) (fileResult, error)
}

// reporter prints results as they come: NDJSON with --json, else one
// line per result (when no bar is shown) and failures on standard error.
type reporter struct {
	mu     sync.Mutex // guards the output and the counts
	quiet  bool       // a bar is shown: print failures only
	single bool       // one transfer: its error is the command's
	first  error      // the first failure
	done   int
	failed int
	bytes  int64
}

// report prints r, the result of a transfer that failed with err (nil:
// it succeeded).
func (rp *reporter) report(r fileResult, err error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	r.Size = max(r.Size, 0)
	if err != nil {
		r.Error = err.Error()
		rp.failed++
		if rp.first == nil {
			rp.first = fmt.Errorf("%s %s: %w", r.Action, r.Dst, err)
		}
	} else {
		rp.done++
		rp.bytes += r.Size
	}
	switch {
	case cf.json:
		_ = json.NewEncoder(os.Stdout).Encode(r)
	case rp.single && r.Error != "":
	case r.Error != "":
		fmt.Fprintf(os.Stderr, "nas: %s %s: %s\n", r.Action, r.Dst, r.Error)
	case rp.quiet:
	case r.DryRun:
		fmt.Printf("would %s %s\n", r.Action, describeResult(r))
	default:
		fmt.Printf("%s %s\n", r.Action, describeResult(r))
	}
}

// describeResult names what a result moved.
func describeResult(r fileResult) string {
	if r.Src == "" {
		return r.Dst
	}
	return fmt.Sprintf("%s -> %s (%d bytes)", r.Src, r.Dst, r.Size)
}

// err is the command's failure when a transfer failed.
func (rp *reporter) err() error {
	switch {
	case rp.failed == 0:
		return nil
	case rp.single:
		return rp.first
	}
	return fmt.Errorf("%d of %d transfers failed", rp.failed, rp.failed+rp.done)
}

// runJobs runs the plan with parallel jobs at a time and reports every
// result; a failed job does not stop the others, an interrupt does.
func runJobs(ctx context.Context, jobs []job, parallel int, dryRun bool, rp *reporter) error {
	var total int64
	for _, j := range jobs {
		if j.res.Size < 0 || total < 0 {
			total = -1
			continue
		}
		total += j.res.Size
	}
	var p *progress
	if !dryRun && len(jobs) > 0 {
		p = newProgress(total, fmt.Sprintf("%d file(s)", len(jobs)))
	}
	rp.quiet = p != nil
	defer p.finish()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for _, j := range jobs {
		if gctx.Err() != nil {
			break
		}
		if dryRun {
			j.res.DryRun = true
			rp.report(j.res, nil)
			continue
		}
		g.Go(func() error {
			r, err := j.run(gctx, p)
			if err != nil {
				r = j.res
			}
			rp.report(r, err)
			return nil
		})
	}
	_ = g.Wait()
	return ctx.Err()
}

// contentType is the Content-Type of a file by its extension ("" when
// unknown: the gateway then stores its default).
func contentType(name string) string {
	return mime.TypeByExtension(filepath.Ext(name))
}

// upload stores the local file path as dst: one PUT below partSize, a
// multipart upload (parts in parallel, aborted on failure) above.
func upload(ctx context.Context, c *objClient, path string, dst nasclient.Object, parallel int, p *progress) (fileResult, error) {
	r := fileResult{Action: "upload", Src: path, Dst: describe(dst)}
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return r, err
	}
	r.Size = st.Size()
	opt := nasclient.PutOptions{ContentType: contentType(path)}
	var info nasclient.Info
	if r.Size < partSize {
		info, err = c.Put(ctx, dst, f, r.Size, opt)
		p.add(r.Size)
	} else {
		r.Multipart = true
		info, err = uploadParts(ctx, c, f, r.Size, dst, opt, parallel, p)
	}
	r.ETag = info.ETag
	return r, err
}

// uploadParts sends size bytes of f as a multipart upload of dst.
func uploadParts(ctx context.Context, c *objClient, f io.ReaderAt, size int64, dst nasclient.Object,
	opt nasclient.PutOptions, parallel int, p *progress) (nasclient.Info, error) {
	if size > maxObject {
		return nasclient.Info{}, fmt.Errorf("%s is %d bytes, over S3's 5 TiB object limit", dst, size)
	}
	u, err := c.CreateUpload(ctx, dst, opt)
	if err != nil {
		return nasclient.Info{}, err
	}
	ps := partSizeFor(size)
	n := int((size + ps - 1) / ps)
	parts := make([]nasclient.Part, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i := range n {
		off := int64(i) * ps
		ln := min(ps, size-off)
		g.Go(func() error {
			part, err := c.UploadPart(gctx, u, i+1, io.NewSectionReader(f, off, ln), ln)
			if err != nil {
				return fmt.Errorf("part %d: %w", i+1, err)
			}
			parts[i] = part
			p.add(ln)
			return nil
		})
	}
	err = g.Wait()
	var info nasclient.Info
	if err == nil {
		info, err = c.CompleteUpload(ctx, u, parts)
	}
	if err != nil {
		abortUpload(ctx, c, u)
	}
	return info, err
}

// abortUpload drops u, even after an interrupt, so no parts are left
// behind; its own failure is not the one to report.
func abortUpload(ctx context.Context, c *objClient, u *nasclient.Upload) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := c.AbortUpload(ctx, u); err != nil {
		fmt.Fprintf(os.Stderr, "nas: abort the upload of %s: %v\n", describe(u.Object), err)
	}
}

// download writes src to name inside root: into a temporary file first,
// renamed into place once whole, so no partial file ever has the name.
func download(ctx context.Context, c *objClient, src nasclient.Object, root *os.Root, name string, p *progress) (fileResult, error) {
	r := fileResult{Action: "download", Src: describe(src), Dst: filepath.Join(root.Name(), name)}
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return r, err
		}
	}
	tmp := fmt.Sprintf("%s.nas-%d.tmp", name, time.Now().UnixNano())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return r, err
	}
	defer root.Remove(tmp) // gone after the rename; cleans up otherwise
	err = c.Get(ctx, src, "", 0, -1, func(body io.Reader, info nasclient.Info) error {
		if r.Size > 0 { // a retry starts over
			p.add(-r.Size)
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			if err := f.Truncate(0); err != nil {
				return err
			}
		}
		r.Size, r.ETag = 0, info.ETag
		p.learnTotal(info.Size)
		_, err := io.Copy(f, &countingReader{r: body, n: &r.Size, p: p})
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r, err
	}
	return r, root.Rename(tmp, name)
}

// countingReader counts what is read through it into n and p.
type countingReader struct {
	r io.Reader
	n *int64
	p *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	*c.n += int64(n)
	c.p.add(int64(n))
	return n, err
}

// copyObject copies src to dst on the gateway: no bytes pass through
// the client.
func copyObject(ctx context.Context, c *objClient, src nasclient.Object, size int64, dst nasclient.Object, p *progress) (fileResult, error) {
	r := fileResult{Action: "copy", Src: describe(src), Dst: describe(dst), Size: size}
	info, err := c.Copy(ctx, src, "", dst)
	r.ETag = info.ETag
	p.add(size)
	return r, err
}
