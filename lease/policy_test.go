package lease_test

import (
	"errors"
	"testing"

	"github.com/agentnas/nas/lease"
)

func TestParsePolicy(t *testing.T) {
	rules, err := lease.ParsePolicy(`{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::data/shared/launch/*"},
		{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::data"},
		{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::other/*"}]}`, "data")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Path != "**" || rules[1].Path != "shared/launch/**" {
		t.Fatalf("rules: %+v", rules)
	}
	for name, doc := range map[string]string{
		"deny":      `{"Statement":[{"Effect":"Deny","Action":"s3:*","Resource":"*"}]}`,
		"non-s3":    `{"Statement":[{"Effect":"Allow","Action":"ec2:RunInstances","Resource":"*"}]}`,
		"condition": `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"StringLike":{"s3:prefix":"a"}}}]}`,
		"notaction": `{"Statement":[{"Effect":"Allow","NotAction":"s3:GetObject","Resource":"*"}]}`,
		"garbage":   `{"Statement":`,
		"iam arn":   `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:iam::1:role/x"}]}`,
	} {
		if _, err := lease.ParsePolicy(doc, "data"); !errors.Is(err, lease.ErrMalformedPolicy) {
			t.Errorf("%s: %v", name, err)
		}
	}
	env := []lease.Rule{{Path: "shared/**", Actions: []lease.Action{lease.List, lease.Read, lease.Write, lease.Propose}}}
	got := lease.Intersect(env, rules)
	if len(got) != 2 {
		t.Fatalf("intersect: %+v", got)
	}
}

// FuzzParsePolicy: any document either parses into valid rules or is
// refused; it never panics.
func FuzzParsePolicy(f *testing.F) {
	f.Add(`{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/a/*"}]}`)
	f.Add(`{"Statement":{"Effect":"Allow","Action":["s3:*"],"Resource":["*"]}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		rules, err := lease.ParsePolicy(doc, "data")
		if err != nil {
			return
		}
		if _, err := lease.CleanView(rules); err != nil && len(rules) > 0 {
			t.Fatalf("parsed rules do not validate: %v (%+v)", err, rules)
		}
	})
}
