package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentnas/nas/apiv1"
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
	cl := &gitexport.Client{C: r.owner.api}
	dir := filepath.Join(tmp, "export.git")
	exp, err := cl.Export(ctx, r.repo, dir)
	if err != nil {
		return false, "export: " + err.Error(), ""
	}
	copyName := r.repo + "-import"
	if _, err := cl.Import(ctx, dir, copyName); err != nil {
		return false, "import: " + err.Error(), ""
	}
	ba, err := r.owner.branchHeads(ctx, r.repo)
	if err != nil {
		return false, err.Error(), ""
	}
	bb, err := r.owner.branchHeads(ctx, copyName)
	if err != nil {
		return false, err.Error(), ""
	}
	if !slices.Equal(ba, bb) {
		return false, fmt.Sprintf("branches differ after import: %v vs %v", ba, bb), ""
	}
	objects, msg := r.sameHistory(ctx, copyName, ba)
	if msg != "" {
		return false, msg, ""
	}
	detail := fmt.Sprintf("exported %d commits to Git and imported them as %s: every branch has the same commit IDs, and %d object reads (every version, every key at every commit) returned the same bytes, ETag and metadata",
		exp.Commits, copyName, objects)
	if s := gitexport.Summary(exp); s != "" {
		detail += "; not exported: " + s
	}
	return true, detail, ""
}

// branchHead is a branch and the commit it points at.
type branchHead struct{ Name, Head string }

// branchHeads lists repo's branches.
func (p *principal) branchHeads(ctx context.Context, repo string) ([]branchHead, error) {
	var out apiv1.BranchListResponse
	if err := p.api.Do(ctx, apiv1.BranchListRequest{Repo: repo, Page: apiv1.Page{Limit: apiv1.MaxLimit}}, &out); err != nil {
		return nil, err
	}
	heads := make([]branchHead, len(out.Branches))
	for i, b := range out.Branches {
		heads[i] = branchHead{b.Name, b.Head}
	}
	return heads, nil
}

// commitIDs is the history of ref in repo, newest first.
func (p *principal) commitIDs(ctx context.Context, repo, ref string) ([]string, error) {
	var out apiv1.CommitLogResponse
	if err := p.api.Do(ctx, apiv1.CommitLogRequest{Repo: repo, Ref: ref, Page: apiv1.Page{Limit: apiv1.MaxLimit}}, &out); err != nil {
		return nil, err
	}
	ids := make([]string, len(out.Commits))
	for i, c := range out.Commits {
		ids[i] = c.ID
	}
	return ids, nil
}

// sameHistory compares, on every branch, the history of the run's
// repository and of its import copyName, every version of the import and
// every key seen so far at every commit. It returns how many object
// versions it compared, or what differs.
func (r *run) sameHistory(ctx context.Context, copyName string, branches []branchHead) (int, string) {
	c := r.owner.s3()
	keys := map[string]bool{}
	objects := 0
	for _, b := range branches {
		la, err := r.owner.commitIDs(ctx, r.repo, b.Name)
		if err != nil {
			return objects, err.Error()
		}
		lb, err := r.owner.commitIDs(ctx, copyName, b.Name)
		if err != nil {
			return objects, err.Error()
		}
		if !slices.Equal(la, lb) {
			return objects, "the history of " + b.Name + " differs after import"
		}
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(copyName)}, branchOpt(b.Name))
		if err != nil {
			return objects, "list versions of the import: " + err.Error()
		}
		for _, v := range out.Versions {
			keys[aws.ToString(v.Key)] = true
			if msg := sameObject(ctx, c, r.repo, copyName, b.Name, aws.ToString(v.Key), aws.ToString(v.VersionId)); msg != "" {
				return objects, msg
			}
			objects++
		}
		for _, id := range la {
			for k := range keys {
				if msg := sameObject(ctx, c, r.repo, copyName, b.Name, k, id); msg != "" {
					return objects, msg
				}
				objects++
			}
		}
	}
	return objects, ""
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
