package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/nastest"
)

// room is a real gateway on loopback with the owner's signed client.
type room struct {
	t     testing.TB
	srv   *nastest.Server
	owner *client.Client
}

var ownerCreds = aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}

func newRoom(t testing.TB) *room {
	t.Helper()
	srv := nastest.Start(t)
	return &room{t: t, srv: srv, owner: client.New(client.Config{Endpoint: srv.Endpoint, Credentials: ownerCreds})}
}

// do calls the control API with c, failing the test on an error.
func (r *room) do(c *client.Client, req apiv1.Request, resp any) {
	r.t.Helper()
	if err := c.Do(context.Background(), req, resp); err != nil {
		r.t.Fatalf("%s: %v", req.Op(), err)
	}
}

func (r *room) s3(cr aws.Credentials) *s3.Client {
	return s3.New(s3.Options{BaseEndpoint: aws.String(r.srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(cr.AccessKeyID, cr.SecretAccessKey, cr.SessionToken)})
}

func (r *room) put(cl *s3.Client, repo, key, body string) {
	r.t.Helper()
	if _, err := cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
		r.t.Fatalf("put %s: %v", key, err)
	}
}

// run is a run's lease on a fork of main, with its credentials.
type run struct {
	lease apiv1.Lease
	creds aws.Credentials
	c     *client.Client
}

// seedRepo creates repo with a protected main holding a few files.
func (r *room) seedRepo(repo string) {
	r.t.Helper()
	f := false
	r.do(r.owner, apiv1.RepoCreateRequest{Repo: repo, Protected: &f}, nil)
	o := r.s3(ownerCreds)
	r.put(o, repo, "docs/guide.md", "# Guide\n\nStep one.\nStep two.\nStep three.\n")
	r.put(o, repo, "docs/notes.md", "notes\n")
	r.put(o, repo, "docs/old.md", "to be removed\n")
	r.do(r.owner, apiv1.CommitCreateRequest{Repo: repo, Branch: "main", Message: "seed"}, nil)
	r.do(r.owner, apiv1.BranchProtectRequest{Repo: repo, Name: "main"}, nil)
	all := []lease.Action{lease.List, lease.Read, lease.Write, lease.Delete, lease.Propose}
	r.do(r.owner, apiv1.RolePutRequest{Role: lease.Role{Name: "writer-" + repo, Repo: repo, View: []lease.Rule{{Path: "**", Actions: all}}}}, nil)
}

// newRun issues a lease of role writer on a fork of main.
func (r *room) newRun(repo, name string) *run {
	r.t.Helper()
	var out apiv1.LeaseResponse
	r.do(r.owner, apiv1.LeaseCreateRequest{Repo: repo, Role: "writer-" + repo, Run: name, ForkFrom: "main", Purpose: "edit the docs",
		Paths: []string{"docs/**"}, Actions: []string{"list", "read", "write", "delete", "propose"}}, &out)
	cr := aws.Credentials{AccessKeyID: out.Lease.AccessKeyID, SecretAccessKey: out.Lease.SecretAccessKey, SessionToken: out.Lease.SessionToken}
	return &run{lease: out.Lease, creds: cr, c: client.New(client.Config{Endpoint: r.srv.Endpoint, Credentials: cr})}
}

// propose has run ru change the docs and propose them into main; it
// returns the proposal (with its gate).
func (r *room) propose(repo string, ru *run, intent string) apiv1.Proposal {
	r.t.Helper()
	cl := r.s3(ru.creds)
	r.put(cl, repo, "docs/guide.md", "# Guide\n\nStep one.\nStep 2, rewritten.\nStep three.\n")
	r.put(cl, repo, "docs/new.md", "a new page\n")
	r.put(cl, repo, "docs/logo.bin", "\x89PNG\x00\x01\x02")
	if _, err := cl.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("docs/old.md")}); err != nil {
		r.t.Fatal(err)
	}
	var out apiv1.ProposeCreateResponse
	r.do(ru.c, apiv1.ProposeCreateRequest{Repo: repo, Into: "main", Intent: intent}, &out)
	if out.Proposal.GateID == "" {
		r.t.Fatalf("no gate: %+v", out.Proposal)
	}
	return out.Proposal
}

// browserish is an HTTP client that sends what a page of the gateway's
// origin sends, and keeps no cookies of its own.
type browserish struct {
	r      *room
	origin string
	cookie string
	csrf   string
}

func (r *room) page() *browserish { return &browserish{r: r, origin: r.srv.Endpoint} }

// send sends a request as the page would, then lets spoil change it.
func (b *browserish) send(method, path, ctype, body string, spoil ...func(*http.Request)) (*http.Response, []byte) {
	b.r.t.Helper()
	req, err := http.NewRequest(method, b.r.srv.Endpoint+path, strings.NewReader(body))
	if err != nil {
		b.r.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Origin", b.origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if b.cookie != "" {
		req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: b.cookie})
	}
	if b.csrf != "" {
		req.Header.Set(auth.CSRFHeader, b.csrf)
	}
	for _, f := range spoil {
		f(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.r.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res, out
}

// signIn posts the sign-in form; on success it keeps the cookie and CSRF
// token.
func (b *browserish) signIn(ak, sk string) (*http.Response, []byte) {
	b.r.t.Helper()
	res, body := b.send(http.MethodPost, "/_nas/ui/signin", "application/x-www-form-urlencoded",
		url.Values{"access_key": {ak}, "secret_key": {sk}}.Encode())
	if res.StatusCode == http.StatusOK {
		for _, c := range res.Cookies() {
			if c.Name == auth.SessionCookie {
				b.cookie = c.Value
			}
		}
		var s struct {
			CSRF string `json:"csrf"`
		}
		json.Unmarshal(body, &s)
		b.csrf = s.CSRF
	}
	return res, body
}

// call calls the control API as the page does.
func (b *browserish) call(op, body string, spoil ...func(*http.Request)) (int, string) {
	b.r.t.Helper()
	res, out := b.send(http.MethodPost, "/_nas/v1/"+op, "application/json", body, spoil...)
	var doc apiv1.ErrorDocument
	json.Unmarshal(out, &doc)
	code := ""
	if doc.Error != nil {
		code = doc.Error.Code
	}
	return res.StatusCode, code
}
