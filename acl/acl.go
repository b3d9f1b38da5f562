package acl

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Permission is what a grant gives, as S3 names it.
type Permission uint8

// The permissions of S3 ACLs; the values are part of the encoding.
const (
	FullControl Permission = iota + 1
	Read
	Write
	ReadACP
	WriteACP
)

var permissionNames = [...]string{FullControl: "FULL_CONTROL", Read: "READ", Write: "WRITE", ReadACP: "READ_ACP", WriteACP: "WRITE_ACP"}

// String returns the permission's S3 name ("READ_ACP").
func (p Permission) String() string {
	if p == 0 || int(p) >= len(permissionNames) {
		return fmt.Sprintf("Permission(%d)", uint8(p))
	}
	return permissionNames[p]
}

func (p Permission) valid() bool { return p > 0 && int(p) < len(permissionNames) }

// ParsePermission returns the permission S3 names s.
func ParsePermission(s string) (Permission, bool) {
	for p, n := range permissionNames {
		if n != "" && n == s {
			return Permission(p), true
		}
	}
	return 0, false
}

// Kind is the type of a grantee; the values are part of the encoding.
type Kind uint8

// The grantee types of S3 ACLs.
const (
	CanonicalUser Kind = iota + 1
	Group
	Email // AmazonCustomerByEmail
)

var kindNames = [...]string{CanonicalUser: "CanonicalUser", Group: "Group", Email: "AmazonCustomerByEmail"}

// String returns the kind's xsi:type in S3's documents.
func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
	return kindNames[k]
}

func (k Kind) valid() bool { return k > 0 && int(k) < len(kindNames) }

// ParseKind returns the kind whose xsi:type is s.
func ParseKind(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n != "" && n == s {
			return Kind(k), true
		}
	}
	return 0, false
}

// The groups S3 defines.
const (
	AllUsers           = "http://acs.amazonaws.com/groups/global/AllUsers"
	AuthenticatedUsers = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	LogDelivery        = "http://acs.amazonaws.com/groups/s3/LogDelivery"
)

// EC2ID is the canonical ID of the account Amazon EC2 reads AMI bundles
// with, the grantee of aws-exec-read (display name EC2Name).
const (
	EC2ID   = "6aa5a366c34c1cbe25dc49211496e913e0351eb0e8c37aa3477e40942ec6b97c"
	EC2Name = "za-team"
)

// Grantee is who a grant is to: the field its Kind names is set.
type Grantee struct {
	Kind  Kind
	ID    string // CanonicalUser: the canonical ID
	URI   string // Group: the group's URI
	Email string // Email: the address
}

// value is the one field of g its kind uses.
func (g Grantee) value() string {
	switch g.Kind {
	case CanonicalUser:
		return g.ID
	case Group:
		return g.URI
	}
	return g.Email
}

// granteeOf is the grantee of kind k and value v.
func granteeOf(k Kind, v string) Grantee {
	switch k {
	case CanonicalUser:
		return Grantee{Kind: k, ID: v}
	case Group:
		return Grantee{Kind: k, URI: v}
	}
	return Grantee{Kind: k, Email: v}
}

// User is the grantee with canonical ID id.
func User(id string) Grantee { return Grantee{Kind: CanonicalUser, ID: id} }

// GroupOf is the grantee that is the group with URI uri.
func GroupOf(uri string) Grantee { return Grantee{Kind: Group, URI: uri} }

// Grant is one permission given to one grantee.
type Grant struct {
	Grantee    Grantee
	Permission Permission
}

// ACL is the grants of one object version or bucket, in the order they
// were set. The owner is not part of it: it is always the gateway's
// owner. An empty ACL grants nothing, not even to the owner (who needs
// no grant); no ACL at all is Private.
type ACL struct {
	Grants []Grant
}

// Private is the ACL of everything that has none set: the owner has
// FULL_CONTROL.
func Private(owner string) ACL {
	return ACL{Grants: []Grant{{User(owner), FullControl}}}
}

// IsPrivate reports whether a is exactly Private(owner).
func (a ACL) IsPrivate(owner string) bool {
	return slices.Equal(a.Grants, Private(owner).Grants)
}

// MaxGrants is S3's bound on the grants of one ACL.
const MaxGrants = 100

// Check reports an ACL of more than MaxGrants grants (stored in every
// version and decoded on every read, so unbounded it would let a writer
// grow an entry to megabytes), or the first grant of a the gateway
// cannot resolve: a canonical ID other than the owner's (and EC2's,
// which only aws-exec-read names), a group S3 does not define, any
// e-mail address (no account has one here), or an unknown permission or
// kind.
func (a ACL) Check(owner string) error {
	if len(a.Grants) > MaxGrants {
		return fmt.Errorf("%d grants, more than %d: %w", len(a.Grants), MaxGrants, ErrInvalid)
	}
	for _, g := range a.Grants {
		if !g.Permission.valid() {
			return fmt.Errorf("permission %d: %w", g.Permission, ErrInvalid)
		}
		switch v := g.Grantee.value(); g.Grantee.Kind {
		case CanonicalUser:
			if v != owner && v != EC2ID {
				return fmt.Errorf("canonical ID %q: %w", v, ErrUnknownGrantee)
			}
		case Group:
			if v != AllUsers && v != AuthenticatedUsers && v != LogDelivery {
				return fmt.Errorf("group %q: %w", v, ErrUnknownGrantee)
			}
		case Email:
			return fmt.Errorf("%q: %w", v, ErrUnresolvableEmail)
		default:
			return fmt.Errorf("grantee type %d: %w", g.Grantee.Kind, ErrInvalid)
		}
	}
	return nil
}

// formatV1 is the first byte of every encoding.
const formatV1 = 1

// Encode returns the canonical encoding of a (see the package doc):
// equal ACLs encode to equal bytes, and the encoding is never empty.
func Encode(a ACL) []byte {
	b := []byte{formatV1}
	for _, g := range a.Grants {
		v := g.Grantee.value()
		b = append(b, byte(g.Grantee.Kind), byte(g.Permission))
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// Decode decodes an ACL written by Encode.
func Decode(b []byte) (ACL, error) {
	if len(b) == 0 || b[0] != formatV1 {
		return ACL{}, ErrCorrupt
	}
	b = b[1:]
	a := ACL{Grants: []Grant{}}
	for len(b) > 0 {
		if len(b) < 3 {
			return ACL{}, ErrCorrupt
		}
		k, p := Kind(b[0]), Permission(b[1])
		l, n := binary.Uvarint(b[2:])
		// A length in more bytes than it needs is not canonical.
		if n <= 0 || n != len(binary.AppendUvarint(nil, l)) || l > uint64(len(b)-2-n) || !k.valid() || !p.valid() {
			return ACL{}, ErrCorrupt
		}
		v := string(b[2+n : 2+n+int(l)])
		a.Grants = append(a.Grants, Grant{granteeOf(k, v), p})
		b = b[2+n+int(l):]
	}
	return a, nil
}
