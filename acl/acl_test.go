package acl

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

const owner = "0123abcd"

func TestCanned(t *testing.T) {
	fc := Grant{User(owner), FullControl}
	for _, tc := range []struct {
		name string
		want []Grant
	}{
		{"private", []Grant{fc}},
		{"public-read", []Grant{fc, {GroupOf(AllUsers), Read}}},
		{"public-read-write", []Grant{fc, {GroupOf(AllUsers), Read}, {GroupOf(AllUsers), Write}}},
		{"authenticated-read", []Grant{fc, {GroupOf(AuthenticatedUsers), Read}}},
		{"aws-exec-read", []Grant{fc, {User(EC2ID), Read}}},
		{"bucket-owner-read", []Grant{fc}},
		{"bucket-owner-full-control", []Grant{fc}},
		{"log-delivery-write", []Grant{fc, {GroupOf(LogDelivery), Write}, {GroupOf(LogDelivery), ReadACP}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Canned(tc.name, owner)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Grants, tc.want) {
				t.Fatalf("got %v, want %v", a.Grants, tc.want)
			}
			if err := a.Check(owner); err != nil {
				t.Fatalf("Check: %v", err)
			}
		})
	}
	if len(cannedNames) != 8 {
		t.Fatalf("%d canned names", len(cannedNames))
	}
	for _, bad := range []string{"", "Private", "public", "public-read "} {
		if _, err := Canned(bad, owner); !errors.Is(err, ErrUnknownCanned) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Canned(%q) = %v, want ErrUnknownCanned", bad, err)
		}
	}
}

func TestParseGrantHeader(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Grant
	}{
		{`id="` + owner + `"`, []Grant{{User(owner), Read}}},
		{`id=` + owner, []Grant{{User(owner), Read}}},
		{`uri="` + AllUsers + `", emailAddress="a@b.c"`, []Grant{{GroupOf(AllUsers), Read}, {Grantee{Kind: Email, Email: "a@b.c"}, Read}}},
		{` ID = "x" ,URI=` + LogDelivery, []Grant{{User("x"), Read}, {GroupOf(LogDelivery), Read}}},
	} {
		got, err := ParseGrantHeader(tc.in, Read)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseGrantHeader(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "id", `id=""`, `id="x`, `id=x"`, `name="x"`, `id="a"b"`, `id="x",`, `id="x" uri="y"`} {
		if g, err := ParseGrantHeader(bad, Read); !errors.Is(err, ErrMalformedGrant) {
			t.Errorf("ParseGrantHeader(%q) = %v, %v; want ErrMalformedGrant", bad, g, err)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		g    Grant
		want error
	}{
		{Grant{User("someone"), Read}, ErrUnknownGrantee},
		{Grant{GroupOf("http://acs.amazonaws.com/groups/global/Nobody"), Read}, ErrUnknownGrantee},
		{Grant{Grantee{Kind: Email, Email: "a@b.c"}, Read}, ErrUnresolvableEmail},
		{Grant{User(owner), 0}, ErrInvalid},
		{Grant{Grantee{Kind: 9, ID: owner}, Read}, ErrInvalid},
	} {
		if err := (ACL{Grants: []Grant{tc.g}}).Check(owner); !errors.Is(err, tc.want) {
			t.Errorf("Check(%v) = %v, want %v", tc.g, err, tc.want)
		}
	}
	many := ACL{Grants: slices.Repeat([]Grant{{User(owner), Read}}, MaxGrants)}
	if err := many.Check(owner); err != nil {
		t.Errorf("%d grants: %v", MaxGrants, err)
	}
	many.Grants = append(many.Grants, Grant{User(owner), Read})
	if err := many.Check(owner); !errors.Is(err, ErrInvalid) {
		t.Errorf("%d grants: %v, want ErrInvalid", len(many.Grants), err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, a := range []ACL{
		{Grants: []Grant{}},
		Private(owner),
		{Grants: []Grant{{GroupOf(AllUsers), Write}, {User(owner), ReadACP}, {GroupOf(AllUsers), Write}}},
		{Grants: []Grant{{Grantee{Kind: Email, Email: "a@b.c"}, WriteACP}}},
	} {
		b := Encode(a)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%v)): %v", a, err)
		}
		if !slices.Equal(got.Grants, a.Grants) || !bytes.Equal(Encode(got), b) {
			t.Fatalf("round trip of %v gave %v", a, got)
		}
	}
	if !bytes.Equal(Encode(ACL{}), []byte{formatV1}) {
		t.Fatal("the empty ACL must encode as the format byte alone")
	}
	for _, bad := range [][]byte{nil, {0}, {2}, {1, 1}, {1, 1, 1, 5, 'a'}, {1, 0, 1, 0}, {1, 1, 6, 0}, {1, 4, 1, 0}} {
		if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%v) = %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestIsPrivate(t *testing.T) {
	pub, _ := Canned("public-read", owner)
	if !Private(owner).IsPrivate(owner) || pub.IsPrivate(owner) || (ACL{}).IsPrivate(owner) || Private("x").IsPrivate(owner) {
		t.Fatal("IsPrivate")
	}
}
