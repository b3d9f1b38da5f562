package api

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentnas/nas/access"
	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/gitexport"
)

// Streaming verbs of export and import (package gitexport). They do not
// fit the JSON verbs (bodies of any size, answers streamed), so
// ServeHTTP hands them to serveStream first. Both are owner operations.
//
//	repo/export  body {"repo": NAME}; answer 200 with the repository as a
//	             dump stream (Content-Type application/x-nas-dump), which
//	             `nas export` writes as a Git repository; an error found
//	             after the answer started ends the stream with an error
//	             record
//	repo/import  ?repo=NAME, body a dump stream (as `nas import` reads it
//	             from Git; sign it as aws-chunked or with its SHA-256);
//	             answer {"repo": ..., "report": ...} once the whole stream
//	             verified and the repository appeared, or an error, and
//	             then no repository NAME exists
//
// While either runs, garbage collection waits (see branch.History and
// branch.Restore).

// serveStream serves repo/export and repo/import; it reports false for
// any other path.
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request) bool {
	name, _ := strings.CutPrefix(r.URL.Path, apiv1.Prefix)
	if name != "repo/export" && name != "repo/import" {
		return false
	}
	fail := func(err error) {
		e := streamError(err)
		if e.Status >= 500 {
			h.log.Error("control api", "path", r.URL.Path, "err", err)
		}
		e.RequestID = w.Header().Get("x-amz-request-id")
		writeError(w, e)
	}
	if r.Method != http.MethodPost {
		fail(&Error{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "use POST"})
		return true
	}
	p, err := h.auth.Authenticate(r, auth.Control)
	if err != nil {
		fail(err)
		return true
	}
	access.From(r.Context()).Principal = p.Name()
	defer h.auth.Finish(r.Context(), p)
	res := p.Signed
	defer res.Body.Close()
	if err := h.auth.OwnerOnly(r.Context(), p, name, auth.Target{}); err != nil {
		fail(err)
		return true
	}
	ctx := r.Context()
	if name == "repo/import" {
		repo := r.URL.Query().Get("repo")
		if err := required("repo", repo); err != nil {
			fail(err)
			return true
		}
		// Refuse a taken name before the body is read: the client waits
		// for 100 Continue, so a refusal here is answered before any of
		// the stream is sent, not by resetting the connection under it.
		if err := h.b.CheckRestore(ctx, repo); err != nil {
			fail(err)
			return true
		}
		rc := http.NewResponseController(w)
		rep, err := gitexport.Load(ctx, h.b, repo, idleReader{r: res.Body, rc: rc})
		_ = rc.SetReadDeadline(time.Time{})
		if err != nil {
			fail(err)
			return true
		}
		rp, err := h.b.GetRepo(ctx, repo)
		if err != nil {
			fail(err)
			return true
		}
		writeJSON(w, http.StatusOK, apiv1.RepoImportResponse{Repo: repoOut(rp), Report: *rep})
		return true
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		fail(err)
		return true
	}
	c := &call{name: name, p: p, body: body}
	var a apiv1.RepoExportRequest
	if err := c.decode(&a); err != nil {
		fail(err)
		return true
	}
	if err := required("repo", a.Repo); err != nil {
		fail(err)
		return true
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		fail(err)
		return true
	}
	w.Header().Set("Content-Type", apiv1.DumpContentType)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if _, err := gitexport.Dump(ctx, h.b, a.Repo, idleWriter{w: w, rc: rc}); err != nil {
		h.log.Warn("export ended early", "repo", a.Repo, "err", err)
	}
	_ = rc.SetWriteDeadline(time.Time{})
	return true
}

// streamError translates gitexport's errors; the rest go to toError.
func streamError(err error) *Error {
	mk := func(status int, code string) *Error {
		return &Error{Status: status, Code: code, Message: err.Error()}
	}
	switch {
	case errors.Is(err, gitexport.ErrMismatch):
		return mk(http.StatusUnprocessableEntity, "ExportMismatch")
	case errors.Is(err, gitexport.ErrFormat), errors.Is(err, gitexport.ErrPath), errors.Is(err, gitexport.ErrRemote):
		return mk(http.StatusBadRequest, "InvalidArgument")
	}
	return toError(err)
}

// streamIdle is how long an export or import waits for its client to
// read or send more before giving up: both hold garbage collection off,
// so a stalled client must not hold it forever.
const streamIdle = 5 * time.Minute

// idleReader and idleWriter move the connection's deadline before every
// read or write (servers without deadlines simply do not enforce it).
type idleReader struct {
	r  io.Reader
	rc *http.ResponseController
}

func (i idleReader) Read(p []byte) (int, error) {
	_ = i.rc.SetReadDeadline(time.Now().Add(streamIdle))
	return i.r.Read(p)
}

type idleWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (i idleWriter) Write(p []byte) (int, error) {
	_ = i.rc.SetWriteDeadline(time.Now().Add(streamIdle))
	return i.w.Write(p)
}
