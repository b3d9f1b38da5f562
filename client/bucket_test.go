package client_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

// ownerOf starts a gateway with repository repo (unprotected) and returns
// a client with the owner's keys.
func ownerOf(t *testing.T, repo string) *client.Client {
	t.Helper()
	srv := nastest.Start(t)
	c := client.New(client.Config{Endpoint: srv.Endpoint,
		Credentials: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}})
	if err := c.Do(context.Background(), apiv1.RepoCreateRequest{Repo: repo, Protected: new(bool)}, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

func put(t *testing.T, c *client.Client, o client.Object, body string) {
	t.Helper()
	if _, err := c.Put(context.Background(), o, strings.NewReader(body), int64(len(body)), client.PutOptions{}); err != nil {
		t.Fatalf("put %s: %v", o, err)
	}
}

// TestListPages: a listing follows continuation tokens to the end, groups
// by the delimiter, and gives back keys with bytes XML cannot carry.
func TestListPages(t *testing.T) {
	c := ownerOf(t, "lister")
	ctx := context.Background()
	var want []string
	for i := range 25 {
		k := fmt.Sprintf("d/%02d", i)
		want = append(want, k)
		put(t, c, client.Object{Repo: "lister", Key: k}, k)
	}
	odd := "x/\x01 a+b%2F&<é>"
	put(t, c, client.Object{Repo: "lister", Key: odd}, "odd")
	put(t, c, client.Object{Repo: "lister", Key: "top"}, "t")

	var keys []string
	pages := 0
	err := c.List(ctx, "lister", "", client.ListOptions{Prefix: "d/", MaxKeys: 10}, func(p *client.ListPage) error {
		pages++
		for _, o := range p.Objects {
			keys = append(keys, o.Key)
			if o.Size != 4 || o.ETag == "" || o.LastModified.IsZero() {
				t.Errorf("listed %+v", o)
			}
		}
		return nil
	})
	if err != nil || pages != 3 || !slices.Equal(keys, want) {
		t.Fatalf("paged listing: %d pages, %v, %v", pages, keys, err)
	}
	var objs, pres []string
	err = c.List(ctx, "lister", "", client.ListOptions{Delimiter: "/"}, func(p *client.ListPage) error {
		for _, o := range p.Objects {
			objs = append(objs, o.Key)
		}
		pres = append(pres, p.Prefixes...)
		return nil
	})
	if err != nil || !slices.Equal(objs, []string{"top"}) || !slices.Equal(pres, []string{"d/", "x/"}) {
		t.Fatalf("one level: %v %v %v", objs, pres, err)
	}
	keys = nil
	err = c.List(ctx, "lister", "", client.ListOptions{Prefix: "x/"}, func(p *client.ListPage) error {
		for _, o := range p.Objects {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil || !slices.Equal(keys, []string{odd}) {
		t.Fatalf("an odd key: %q %v", keys, err)
	}
	err = c.List(ctx, "nosuchrepo", "", client.ListOptions{}, func(*client.ListPage) error { return nil })
	if client.Code(err) != "NoSuchBucket" {
		t.Fatalf("listing a missing repository: %v", err)
	}
}

// TestDeleteObjects: a batch deletes every key it names, missing ones and
// ones XML cannot carry included, and refuses more than 1000.
func TestDeleteObjects(t *testing.T) {
	c := ownerOf(t, "deleter")
	ctx := context.Background()
	var keys []string
	for i := range 30 {
		k := fmt.Sprintf("k%02d", i)
		keys = append(keys, k)
		put(t, c, client.Object{Repo: "deleter", Key: k}, "x")
	}
	for _, k := range []string{"ctl\x01key", "a\uFFFDb"} { // keys XML cannot carry are deleted one by one
		keys = append(keys, k)
		put(t, c, client.Object{Repo: "deleter", Key: k}, "x")
	}
	failed, err := c.DeleteObjects(ctx, "deleter", "", append(keys, "never-there"))
	if err != nil || len(failed) != 0 {
		t.Fatalf("delete: %v %v", failed, err)
	}
	n := 0
	c.List(ctx, "deleter", "", client.ListOptions{}, func(p *client.ListPage) error { n += len(p.Objects); return nil })
	if n != 0 {
		t.Fatalf("%d objects left", n)
	}
	if _, err := c.DeleteObjects(ctx, "deleter", "", make([]string, 1001)); err == nil {
		t.Fatal("1001 keys in one call")
	}
}

// TestCopyAcrossBranches: a copy reads its source from the branch the
// source names, and writes the destination's branch.
func TestCopyAcrossBranches(t *testing.T) {
	c := ownerOf(t, "copier")
	ctx := context.Background()
	if err := c.Do(ctx, apiv1.CommitCreateRequest{Repo: "copier", Branch: "main", Message: "base", AllowEmpty: true}, nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"exp/run_1", "other"} {
		if err := c.Do(ctx, apiv1.BranchCreateRequest{Repo: "copier", Name: b, From: "main"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	src := client.Object{Repo: "copier", Branch: "exp/run_1", Key: "a b/src.txt"}
	put(t, c, src, "from the run")
	dst := client.Object{Repo: "copier", Branch: "other", Key: "copied/x.txt"}
	info, err := c.Copy(ctx, src, "", dst)
	if err != nil || info.ETag == "" {
		t.Fatalf("copy: %+v %v", info, err)
	}
	var got string
	err = c.Get(ctx, dst, "", 0, -1, func(r io.Reader, _ client.Info) error {
		b, err := io.ReadAll(r)
		got = string(b)
		return err
	})
	if err != nil || got != "from the run" {
		t.Fatalf("copied object: %q %v", got, err)
	}
	if _, err := c.Copy(ctx, client.Object{Repo: "copier", Branch: "other", Key: "missing"}, "", dst); client.Code(err) != "NoSuchKey" {
		t.Fatalf("copy of a missing key: %v", err)
	}
}
