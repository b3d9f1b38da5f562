package acl

import (
	"fmt"
	"strings"
)

// GrantHeaders lists the x-amz-grant-* request headers and what each
// grants, in the order their grants join an ACL.
var GrantHeaders = []struct {
	Name       string
	Permission Permission
}{
	{"x-amz-grant-full-control", FullControl},
	{"x-amz-grant-read", Read},
	{"x-amz-grant-write", Write},
	{"x-amz-grant-read-acp", ReadACP},
	{"x-amz-grant-write-acp", WriteACP},
}

// ParseGrantHeader parses the value of an x-amz-grant-* header, a comma
// separated list of grantees each written type=value, the value quoted
// or not: id="canonical id", uri="group URI", emailAddress="address"
// (types are case-insensitive). It returns one grant of p per grantee,
// in order. It does not check that the grantees exist (see Check).
func ParseGrantHeader(v string, p Permission) ([]Grant, error) {
	var out []Grant
	for item := range strings.SplitSeq(v, ",") {
		typ, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want type=value: %w", item, ErrMalformedGrant)
		}
		val, err := unquote(strings.TrimSpace(val))
		if err != nil {
			return nil, err
		}
		var g Grantee
		switch strings.ToLower(strings.TrimSpace(typ)) {
		case "id":
			g = User(val)
		case "uri":
			g = GroupOf(val)
		case "emailaddress":
			g = Grantee{Kind: Email, Email: val}
		default:
			return nil, fmt.Errorf("grantee type %q: want id, uri or emailAddress: %w", typ, ErrMalformedGrant)
		}
		out = append(out, Grant{g, p})
	}
	return out, nil
}

// unquote removes the double quotes around v, if it has them; an empty
// value is malformed.
func unquote(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		if len(v) < 2 || !strings.HasSuffix(v, `"`) || strings.Contains(v[1:len(v)-1], `"`) {
			return "", fmt.Errorf("%s: unbalanced quotes: %w", v, ErrMalformedGrant)
		}
		v = v[1 : len(v)-1]
	}
	if v == "" || strings.Contains(v, `"`) {
		return "", fmt.Errorf("%q: empty or stray quote: %w", v, ErrMalformedGrant)
	}
	return v, nil
}
