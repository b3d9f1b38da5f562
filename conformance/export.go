package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/gitexport"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// checkExport is L0.4: export the conformance repository as Git, import
// it under a new name, and compare every branch's history (commit IDs)
// and every object's bytes, ETag and metadata at every commit.
func checkExport(ctx context.Context, r *run) (bool, string, string) {
	tmp, err := os.MkdirTemp("", "nas-conformance-export-")
	if err != nil {
		return false, err.Error(), ""
	}
	defer os.RemoveAll(tmp)
	cl := &gitexport.Client{C: client.New(client.Config{Endpoint: r.owner.endpoint, Credentials: r.owner.creds})}
	dir := filepath.Join(tmp, "export.git")
	exp, err := cl.Export(ctx, r.repo, dir)
	if err != nil {
		return false, "export: " + err.Error(), ""
	}
	copyName := r.repo + "-import"
	if _, err := cl.Import(ctx, dir, copyName); err != nil {
		return false, "import: " + err.Error(), ""
	}
	var ba, bb struct {
		Branches []struct {
			Name string `json:"name"`
			Head string `json:"head"`
		} `json:"branches"`
	}
	if err := r.owner.call(ctx, "branch/list", map[string]any{"repo": r.repo, "limit": 10000}, &ba); err != nil {
		return false, err.Error(), ""
	}
	if err := r.owner.call(ctx, "branch/list", map[string]any{"repo": copyName, "limit": 10000}, &bb); err != nil {
		return false, err.Error(), ""
	}
	if fmt.Sprint(ba) != fmt.Sprint(bb) {
		return false, fmt.Sprintf("branches differ after import: %v vs %v", ba, bb), ""
	}
	c := r.owner.s3()
	keys := map[string]bool{}
	commits, objects := 0, 0
	for _, b := range ba.Branches {
		var la, lb struct {
			Commits []struct {
				ID string `json:"id"`
			} `json:"commits"`
		}
		if err := r.owner.call(ctx, "commit/log", map[string]any{"repo": r.repo, "ref": b.Name, "limit": 10000}, &la); err != nil {
			return false, err.Error(), ""
		}
		if err := r.owner.call(ctx, "commit/log", map[string]any{"repo": copyName, "ref": b.Name, "limit": 10000}, &lb); err != nil {
			return false, err.Error(), ""
		}
		if fmt.Sprint(la) != fmt.Sprint(lb) {
			return false, "the history of " + b.Name + " differs after import", ""
		}
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(copyName)}, branchOpt(b.Name))
		if err != nil {
			return false, "list versions of the import: " + err.Error(), ""
		}
		for _, v := range out.Versions {
			keys[aws.ToString(v.Key)] = true
			if msg := sameObject(ctx, c, r.repo, copyName, b.Name, aws.ToString(v.Key), aws.ToString(v.VersionId)); msg != "" {
				return false, msg, ""
			}
			objects++
		}
		for _, cm := range la.Commits {
			commits++
			for k := range keys {
				if msg := sameObject(ctx, c, r.repo, copyName, b.Name, k, cm.ID); msg != "" {
					return false, msg, ""
				}
				objects++
			}
		}
	}
	detail := fmt.Sprintf("exported %d commits to Git and imported them as %s: every branch has the same commit IDs, and %d object reads (every version, every key at every commit) returned the same bytes, ETag and metadata",
		exp.Commits, copyName, objects)
	if s := gitexport.Summary(exp); s != "" {
		detail += "; not exported: " + s
	}
	return true, detail, ""
}

func branchOpt(name string) func(*s3.Options) {
	return s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", name))
}

// sameObject compares one object version in two repositories.
func sameObject(ctx context.Context, c *s3.Client, a, b, branch, key, vid string) string {
	oa, ea := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a), Key: aws.String(key), VersionId: aws.String(vid)}, branchOpt(branch))
	ob, eb := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key), VersionId: aws.String(vid)}, branchOpt(branch))
	if (ea == nil) != (eb == nil) || ea != nil && code(ea) != code(eb) {
		return fmt.Sprintf("%s@%s on %s: %s in the source, %s in the import", key, vid, branch, code(ea), code(eb))
	}
	if ea != nil {
		return ""
	}
	defer oa.Body.Close()
	defer ob.Body.Close()
	ra, _ := io.ReadAll(oa.Body)
	rb, _ := io.ReadAll(ob.Body)
	if !bytes.Equal(ra, rb) || aws.ToString(oa.ETag) != aws.ToString(ob.ETag) || aws.ToString(oa.VersionId) != aws.ToString(ob.VersionId) ||
		fmt.Sprint(oa.Metadata) != fmt.Sprint(ob.Metadata) || aws.ToString(oa.ContentType) != aws.ToString(ob.ContentType) {
		return fmt.Sprintf("%s@%s on %s differs after import", key, vid, branch)
	}
	return ""
}
