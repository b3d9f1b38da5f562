package e2e_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentnas/nas/nastest"
)

// Section 6: STS AssumeRole and GetCallerIdentity on the S3 endpoint.

// stsLease turns AssumeRole credentials into a leaseInfo, looking the lease
// up with its own credentials.
func stsLease(t testing.TB, srv *nastest.Server, c aws.Credentials) *leaseInfo {
	t.Helper()
	li := &leaseInfo{Creds: c, ExpiresAt: c.Expires}
	me := leaseCtl(t, srv, li).ok("lease/get", map[string]any{})["lease"].(map[string]any)
	li.ID, li.Run, li.Branch, li.Repo, li.Role = me["lease_id"].(string), me["run"].(string), me["branch"].(string), me["repo"].(string), me["role"].(string)
	li.Raw = me
	return li
}

func credsOf(out *sts.AssumeRoleOutput) aws.Credentials {
	c := out.Credentials
	return aws.Credentials{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey),
		SessionToken: aws.ToString(c.SessionToken), CanExpire: true, Expires: aws.ToTime(c.Expiration)}
}

func TestLeaseSTS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "sts"
	createBucket(t, own, repo)
	for k, v := range map[string]string{"shared/launch/a.txt": "launch-a", "shared/launch/sub/b.txt": "launch-b", "finance/x": "finance-x"} {
		put(t, own, repo, k, []byte(v))
	}
	oc.commit(repo, "main", "seed")
	oc.ok("role/put", map[string]any{"name": "etl", "repo": repo, "fork_from": "main", "max_ttl": "2h",
		"view": []map[string]any{{"path": "shared/launch/**", "actions": []string{"list", "read", "write"}}}})
	stc := newSTS(t, srv, staticCreds(owner))
	assume := func(t *testing.T, in *sts.AssumeRoleInput) *leaseInfo {
		t.Helper()
		if in.RoleArn == nil {
			in.RoleArn = roleArn("etl")
		}
		out, err := stc.AssumeRole(ctx, in)
		must(t, err)
		return stsLease(t, srv, credsOf(out))
	}

	t.Run("AssumeRole", func(t *testing.T) {
		out, err := stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("job-1"), DurationSeconds: aws.Int32(3600)})
		must(t, err)
		if arn := aws.ToString(out.AssumedRoleUser.Arn); arn != "arn:aws:sts::000000000000:assumed-role/etl/job-1" {
			t.Errorf("assumed role ARN %q", arn)
		}
		if d := time.Until(aws.ToTime(out.Credentials.Expiration)); d < 58*time.Minute || d > 61*time.Minute {
			t.Errorf("credentials live %s, want 1h", d)
		}
		li := stsLease(t, srv, credsOf(out))
		if li.Run != "job-1" || li.Branch != "etl/job-1" || li.Repo != repo || li.Role != "etl" {
			t.Fatalf("lease %v", li.Raw)
		}
		c := leaseS3(t, srv, li)
		got, _ := get(t, c, repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("launch-a"))
		_, _, err = tryGet(c, repo, "finance/x")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		put(t, c, repo, "shared/launch/job-1", []byte("job-1 work"))
		_, _, err = tryGet(own, repo, "shared/launch/job-1")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey") // on its fork, not on main

		id, err := newSTS(t, srv, staticCreds(li.Creds)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		must(t, err)
		if aws.ToString(id.Arn) != "arn:aws:sts::000000000000:assumed-role/etl/job-1" || aws.ToString(id.Account) != "000000000000" {
			t.Errorf("lease caller identity %q %q", aws.ToString(id.Arn), aws.ToString(id.Account))
		}
		id, err = stc.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		must(t, err)
		if aws.ToString(id.Arn) != "arn:aws:iam::000000000000:user/owner" || aws.ToString(id.Account) != "000000000000" {
			t.Errorf("owner caller identity %q %q", aws.ToString(id.Arn), aws.ToString(id.Account))
		}
	})

	t.Run("SameSessionContinuesTheRun", func(t *testing.T) {
		first := assume(t, &sts.AssumeRoleInput{RoleSessionName: aws.String("job-2")})
		put(t, leaseS3(t, srv, first), repo, "shared/launch/job-2", []byte("first credentials"))
		second := assume(t, &sts.AssumeRoleInput{RoleSessionName: aws.String("job-2")})
		if second.ID == first.ID || second.Creds.AccessKeyID == first.Creds.AccessKeyID {
			t.Fatal("assuming again returned the same lease")
		}
		if second.Run != first.Run || second.Branch != first.Branch {
			t.Fatalf("second AssumeRole: run %s branch %s, want %s %s", second.Run, second.Branch, first.Run, first.Branch)
		}
		got, _ := get(t, leaseS3(t, srv, second), repo, "shared/launch/job-2")
		wantBytes(t, got, []byte("first credentials"))

		// The SDK's provider refreshing (here on every use) stays on the
		// run's branch.
		prov := stscreds.NewAssumeRoleProvider(stc, "arn:aws:iam::000000000000:role/etl", func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = "job-3"
			o.Duration = 15 * time.Minute
		})
		cache := aws.NewCredentialsCache(prov, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 15 * time.Minute })
		c := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){func(o *s3.Options) { o.Credentials = cache }}})
		put(t, c, repo, "shared/launch/job-3", []byte("refreshed"))
		got, _ = get(t, c, repo, "shared/launch/job-3")
		wantBytes(t, got, []byte("refreshed"))
		var keys []string
		var branch string
		for range 3 {
			cr, err := cache.Retrieve(ctx)
			must(t, err)
			keys = append(keys, cr.AccessKeyID)
			li := stsLease(t, srv, cr)
			if branch == "" {
				branch = li.Branch
			}
			if li.Run != "job-3" || li.Branch != branch {
				t.Fatalf("refreshed lease: run %s branch %s, want job-3 %s", li.Run, li.Branch, branch)
			}
		}
		if slices.Sort(keys); len(slices.Compact(keys)) < 2 {
			t.Fatalf("the provider did not refresh: %q", keys)
		}
		ls := oc.as(t).ok("lease/list", map[string]any{"repo": repo, "role": "etl", "run": "job-3"})["leases"].([]any)
		if len(ls) < 3 {
			t.Fatalf("%d leases for run job-3", len(ls))
		}
		for _, l := range ls {
			if l.(map[string]any)["branch"] != branch {
				t.Fatalf("run job-3 forked again: %v", l)
			}
		}
		branches := oc.as(t).ok("branch/list", map[string]any{"repo": repo})["branches"].([]any)
		n := 0
		for _, b := range branches {
			if strings.HasPrefix(b.(map[string]any)["name"].(string), "etl/job-3") {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("run job-3 has %d branches", n)
		}
	})

	t.Run("DistinctRunsGetDistinctBranches", func(t *testing.T) {
		a := assume(t, &sts.AssumeRoleInput{RoleSessionName: aws.String("job-7")})
		put(t, leaseS3(t, srv, a), repo, "shared/launch/job-7-private", []byte("job-7 only"))
		for _, session := range []string{"JOB-7", "job@7", "job+7", "Job=7"} {
			t.Run(session, func(t *testing.T) {
				b := assume(t, &sts.AssumeRoleInput{RoleSessionName: aws.String(session)})
				if b.Run == a.Run {
					t.Fatalf("session %q continued run %q", session, a.Run)
				}
				if b.Branch == a.Branch {
					t.Errorf("run %q was put on run %q's branch %s", b.Run, a.Run, a.Branch)
				}
				if _, _, err := tryGet(leaseS3(t, srv, b), repo, "shared/launch/job-7-private"); err == nil {
					t.Errorf("run %q reads run %q's work", b.Run, a.Run)
				}
			})
		}
		// A run does not land on a branch the owner made for something else.
		oc.as(t).ok("branch/create", map[string]any{"repo": repo, "name": "etl/prod", "from": "main"})
		put(t, newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("etl/prod")}}), repo, "shared/launch/prod-only", []byte("prod"))
		t.Run("ExistingBranch", func(t *testing.T) {
			// Refusing is as good as a fresh branch: the run must never be
			// put on a branch it did not create.
			out, err := stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("prod")})
			if err == nil {
				b := stsLease(t, srv, credsOf(out))
				if b.Branch == "etl/prod" {
					t.Errorf("run prod was put on the existing branch etl/prod")
				}
			} else if !strings.Contains(err.Error(), "ValidationError") {
				t.Errorf("AssumeRole onto an existing branch: %v", err)
			}
		})
	})

	t.Run("SessionPolicy", func(t *testing.T) {
		pol := `{"Version":"2012-10-17","Statement":[` +
			`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::sts"},` +
			`{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::sts/shared/launch/sub/*"]}]}`
		li := assume(t, &sts.AssumeRoleInput{RoleSessionName: aws.String("job-p1"), Policy: aws.String(pol)})
		c := leaseS3(t, srv, li)
		keys := keysOf(t, c, repo, "")
		if !slices.Contains(keys, "shared/launch/a.txt") || !slices.Contains(keys, "shared/launch/sub/b.txt") {
			t.Fatalf("listing under the policy: %q", keys)
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, "shared/launch/") {
				t.Fatalf("listing under the policy shows %q", k)
			}
		}
		got, _ := get(t, c, repo, "shared/launch/sub/b.txt")
		wantBytes(t, got, []byte("launch-b"))
		_, _, err := tryGet(c, repo, "shared/launch/a.txt")
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		_, _, err = tryGet(c, repo, "finance/x")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/sub/x"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")

		// IAM "*" spans "/"; a policy wider than the role stays within it.
		pol = `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"s3:Get*","Resource":"arn:aws:s3:::sts/*"}}`
		li = assume(t, &sts.AssumeRoleInput{RoleSessionName: aws.String("job-p2"), Policy: aws.String(pol)})
		c = leaseS3(t, srv, li)
		got, _ = get(t, c, repo, "shared/launch/sub/b.txt")
		wantBytes(t, got, []byte("launch-b"))
		_, _, err = tryGet(c, repo, "finance/x")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(repo)})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
	})

	t.Run("MalformedPolicyDocument", func(t *testing.T) {
		const allow = `"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::sts/*"`
		for name, doc := range map[string]string{
			"Deny":              `{"Statement":[{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::sts/*"}]}`,
			"AllowAndDeny":      `{"Statement":[{` + allow + `},{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::sts/finance/*"}]}`,
			"Condition":         `{"Statement":[{` + allow + `,"Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`,
			"ConditionNull":     `{"Statement":[{` + allow + `,"Condition":null}]}`,
			"NotAction":         `{"Statement":[{"Effect":"Allow","NotAction":"s3:DeleteObject","Resource":"arn:aws:s3:::sts/*"}]}`,
			"NotResource":       `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","NotResource":"arn:aws:s3:::sts/finance/*"}]}`,
			"Principal":         `{"Statement":[{` + allow + `,"Principal":"*"}]}`,
			"IAMAction":         `{"Statement":[{"Effect":"Allow","Action":"iam:PassRole","Resource":"*"}]}`,
			"STSAction":         `{"Statement":[{"Effect":"Allow","Action":["s3:GetObject","sts:AssumeRole"],"Resource":"*"}]}`,
			"NonS3Resource":     `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:iam::000000000000:role/etl"}]}`,
			"NotJSON":           `{"Statement":`,
			"NoStatements":      `{"Version":"2012-10-17","Statement":[]}`,
			"LowercaseEffect":   `{"Statement":[{"Effect":"allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::sts/*"}]}`,
			"LowercaseCondKey":  `{"Statement":[{` + allow + `,"condition":{"Bool":{"aws:SecureTransport":"true"}}}]}`,
			"MissingResource":   `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject"}]}`,
			"ActionWithoutName": `{"Statement":[{"Effect":"Allow","Action":"s3:","Resource":"*"}]}`,
		} {
			t.Run(name, func(t *testing.T) {
				_, err := stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("job-m"), Policy: aws.String(doc)})
				wantAPIError(t, err, "MalformedPolicyDocument")
			})
		}
	})

	t.Run("Validation", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			in   sts.AssumeRoleInput
			code string
		}{
			{"DurationTooShort", sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("job-v"), DurationSeconds: aws.Int32(899)}, "ValidationError"},
			{"DurationOverMax", sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("job-v"), DurationSeconds: aws.Int32(86401)}, "ValidationError"},
			{"DurationOverRole", sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("job-v"), DurationSeconds: aws.Int32(3 * 3600)}, "ValidationError"},
			{"UnknownRole", sts.AssumeRoleInput{RoleArn: roleArn("nosuch"), RoleSessionName: aws.String("job-v")}, "AccessDenied"},
			{"MalformedArn", sts.AssumeRoleInput{RoleArn: aws.String("etl"), RoleSessionName: aws.String("job-v")}, "ValidationError"},
			{"SessionTooShort", sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("j")}, "ValidationError"},
			{"SessionBadChars", sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("../main")}, "ValidationError"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := stc.AssumeRole(ctx, &tc.in)
				wantAPIError(t, err, tc.code)
			})
		}
		// None of them forked a branch.
		for _, b := range oc.as(t).ok("branch/list", map[string]any{"repo": repo})["branches"].([]any) {
			if n := b.(map[string]any)["name"].(string); strings.Contains(n, "job-v") || strings.Contains(n, "main/") {
				t.Errorf("a refused AssumeRole left branch %s", n)
			}
		}
	})

	t.Run("RevokedCredentialsCannotAssume", func(t *testing.T) {
		li := assume(t, &sts.AssumeRoleInput{RoleSessionName: aws.String("job-r")})
		oc.as(t).revoke(li.ID)
		_, err := newSTS(t, srv, staticCreds(li.Creds)).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("job-r2")})
		if err == nil {
			t.Fatal("a revoked lease assumed a role")
		}
		_, err = newSTS(t, srv, staticCreds(li.Creds)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		wantAPIError(t, err, "InvalidClientTokenId")
	})
}
