package lease

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentnas/nas/glob"
)

// s3Actions maps the IAM actions of S3 that the gateway serves to lease
// actions. IAM action names are matched case-insensitively, with IAM
// wildcards ("s3:Get*").
var s3Actions = map[string]Action{
	"getobject": Read, "getobjectversion": Read, "getobjectacl": Read, "getobjectversionacl": Read,
	"getobjectattributes": Read,
	"listbucket":          List, "listbucketversions": List, "listbucketmultipartuploads": List,
	"listmultipartuploadparts": List, "getbucketlocation": List, "getbucketversioning": List,
	"getbucketacl": List, "listallmybuckets": List,
	"putobject": Write, "putobjectacl": Write, "abortmultipartupload": Write,
	"deleteobject": Delete, "deleteobjectversion": Delete,
}

// bucketLevel actions apply to a bucket ARN; the rest to object ARNs.
func bucketLevel(a Action) bool { return a == List }

// iamMatch matches an IAM pattern ("*" any run of characters, "?" one).
func iamMatch(pattern, s string) bool {
	return glob.Match(strings.ReplaceAll(pattern, "*", "**"), s) || pattern == s
}

type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

type statement struct {
	Sid         string          `json:"Sid"`
	Effect      string          `json:"Effect"`
	Action      stringOrList    `json:"Action"`
	Resource    stringOrList    `json:"Resource"`
	NotAction   json.RawMessage `json:"NotAction"`
	NotResource json.RawMessage `json:"NotResource"`
	Principal   json.RawMessage `json:"Principal"`
	Condition   json.RawMessage `json:"Condition"`
}

type policyDoc struct {
	Version   string          `json:"Version"`
	Statement json.RawMessage `json:"Statement"`
}

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedPolicy, fmt.Sprintf(format, a...))
}

// ParsePolicy turns an IAM session policy into view rules for repository
// repo. Only Allow statements of S3 actions on S3 resources are accepted;
// conditions, Deny, NotAction, NotResource and Principal are refused rather
// than ignored, since ignoring them would widen the view. Resources of other
// buckets grant nothing. A bucket ARN grants the bucket-level actions
// (listing) on every key; an object ARN "arn:aws:s3:::B/P" grants the
// object actions on keys matching P, whose "*" matches any characters,
// "/" included.
func ParsePolicy(doc, repo string) ([]Rule, error) {
	var p policyDoc
	dec := json.NewDecoder(strings.NewReader(doc))
	if err := dec.Decode(&p); err != nil {
		return nil, malformed("not a JSON policy: %v", err)
	}
	var sts []statement
	if err := json.Unmarshal(p.Statement, &sts); err != nil {
		var one statement
		if err := json.Unmarshal(p.Statement, &one); err != nil {
			return nil, malformed("Statement must be an object or a list")
		}
		sts = []statement{one}
	}
	if len(sts) == 0 {
		return nil, malformed("no statements")
	}
	byPath := map[string][]Action{}
	for i, st := range sts {
		switch {
		case st.Effect != "Allow":
			return nil, malformed("statement %d: only Effect Allow is supported", i)
		case st.NotAction != nil || st.NotResource != nil:
			return nil, malformed("statement %d: NotAction and NotResource are not supported", i)
		case st.Principal != nil:
			return nil, malformed("statement %d: a session policy has no Principal", i)
		case st.Condition != nil:
			return nil, malformed("statement %d: conditions are not supported", i)
		case len(st.Action) == 0 || len(st.Resource) == 0:
			return nil, malformed("statement %d: Action and Resource are required", i)
		}
		var acts []Action
		for _, a := range st.Action {
			svc, name, ok := strings.Cut(a, ":")
			if a == "*" {
				svc, name, ok = "s3", "*", true
			}
			if !ok || !strings.EqualFold(svc, "s3") || name == "" {
				return nil, malformed("statement %d: %q is not an S3 action", i, a)
			}
			for known, act := range s3Actions {
				if iamMatch(strings.ToLower(name), known) {
					acts = append(acts, act)
				}
			}
		}
		for _, res := range st.Resource {
			var bucket, key string
			var hasKey bool
			if res == "*" {
				bucket, key, hasKey = "*", "*", true
			} else {
				rest, ok := strings.CutPrefix(res, "arn:aws:s3:::")
				if !ok {
					return nil, malformed("statement %d: %q is not an S3 resource", i, res)
				}
				bucket, key, hasKey = strings.Cut(rest, "/")
			}
			if !iamMatch(bucket, repo) {
				continue // another bucket: grants nothing here
			}
			for _, a := range acts {
				switch {
				case bucketLevel(a) && (!hasKey || res == "*"):
					byPath["**"] = append(byPath["**"], a)
				case !bucketLevel(a) && hasKey:
					g := strings.ReplaceAll(key, "*", "**")
					byPath[g] = append(byPath[g], a)
				}
			}
		}
	}
	var rules []Rule
	for p, as := range byPath {
		rules = append(rules, Rule{Path: p, Actions: NormActions(as)})
	}
	slices.SortFunc(rules, func(a, b Rule) int { return strings.Compare(a.Path, b.Path) })
	return rules, nil
}

// Intersect returns rules granting only what both a and b grant, as far as
// globs can express it: where one glob contains the other the narrower one
// is kept with the common actions; partial overlaps are dropped (narrower,
// never wider). Propose follows write: it survives on paths where b grants
// write and a grants propose.
func Intersect(a, b []Rule) []Rule {
	var out []Rule
	for _, x := range a {
		for _, y := range b {
			var acts []Action
			for _, act := range x.Actions {
				if slices.Contains(y.Actions, act) || act == Propose && slices.Contains(y.Actions, Write) {
					acts = append(acts, act)
				}
			}
			if len(acts) == 0 {
				continue
			}
			switch {
			case glob.Covers(x.Path, y.Path):
				out = append(out, Rule{Path: y.Path, Actions: acts})
			case glob.Covers(y.Path, x.Path):
				out = append(out, Rule{Path: x.Path, Actions: acts})
			}
		}
	}
	return out
}
