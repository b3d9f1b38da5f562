package s3api

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentnas/nas/manifest"
)

func TestParseTaggingHeader(t *testing.T) {
	many := make([]string, 11)
	for i := range many {
		many[i] = fmt.Sprintf("k%d=v", i)
	}
	for _, tc := range []struct {
		header string
		want   string // the tags, or the error code
	}{
		{"", "[]"},
		{"a=1", "[{a 1}]"},
		{"b=2&a=1", "[{a 1} {b 2}]"},
		{"k+ey=v%20al&x=", "[{k ey v al} {x }]"},
		{"flag", "[{flag }]"},
		{"a=1&a=2", "InvalidArgument"},
		{"a=%zz", "InvalidArgument"},
		{"a=1;b=2", "InvalidArgument"},
		{"=v", "InvalidTag"},
		{"aws:x=1", "InvalidTag"},
		{"AWS:x=1", "InvalidTag"},
		{"awsx=1", "[{awsx 1}]"},
		{strings.Join(many[:10], "&"), "10 tags"},
		{strings.Join(many, "&"), "InvalidTag"},
		{strings.Repeat("é", 128) + "=v", "1 tags"},
		{strings.Repeat("é", 129) + "=v", "InvalidTag"},
		{"k=" + strings.Repeat("v", 256), "1 tags"},
		{"k=" + strings.Repeat("v", 257), "InvalidTag"},
		{"k=%ff", "InvalidTag"},
	} {
		tags, err := parseTaggingHeader(http.Header{"X-Amz-Tagging": {tc.header}})
		got := fmt.Sprint(tags)
		if tags == nil && err == nil {
			got = "[]"
		}
		if len(tags) > 1 && strings.HasSuffix(tc.want, " tags") || len(tags) == 1 && tc.want == "1 tags" {
			got = fmt.Sprintf("%d tags", len(tags))
		}
		if err != nil {
			got = toS3(err).Code
		}
		if got != tc.want {
			t.Errorf("x-amz-tagging %.40q: %s, want %s", tc.header, got, tc.want)
		}
	}
}

func TestValidTagsBody(t *testing.T) {
	for _, tc := range []struct {
		body string
		lim  tagLimit
		want string
	}{
		{`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`, objectTagLimit, "[{a 1}]"},
		{`<Tagging><TagSet></TagSet></Tagging>`, objectTagLimit, "[]"},
		{`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>`, objectTagLimit, "InvalidTag"},
		{`<Tagging><TagSet><Tag><Value>1</Value></Tag></TagSet></Tagging>`, objectTagLimit, "InvalidTag"},
		{`<Tagging><TagSet>` + strings.Repeat(`<Tag><Key>k</Key></Tag>`, 11) + `</TagSet></Tagging>`, objectTagLimit, "InvalidTag"},
	} {
		var doc tagging
		if err := xml.Unmarshal([]byte(tc.body), &doc); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		tags, err := validTags(doc.TagSet, tc.lim)
		got := fmt.Sprint(tags)
		if tags == nil {
			got = "[]"
		}
		if err != nil {
			got = toS3(err).Code
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.body, got, tc.want)
		}
	}
	many := make([]tag, 50)
	for i := range many {
		many[i] = tag{Key: fmt.Sprint(i)}
	}
	if _, err := validTags(many, bucketTagLimit); err != nil {
		t.Errorf("50 bucket tags: %v", err)
	}
	if _, err := validTags(append(many, tag{Key: "x"}), bucketTagLimit); err == nil || toS3(err).Code != "InvalidTag" {
		t.Errorf("51 bucket tags: %v", err)
	}
}

// checkTags holds for every tag set the parsers accept: within S3's
// limits, sorted, unique.
func checkTags(t *testing.T, tags []manifest.Pair) {
	if len(tags) > maxObjectTags {
		t.Fatalf("%d tags accepted", len(tags))
	}
	for i, p := range tags {
		if p.Name == "" || utf8.RuneCountInString(p.Name) > maxTagKeyLen || utf8.RuneCountInString(p.Value) > maxTagValueLen ||
			!utf8.ValidString(p.Name) || !utf8.ValidString(p.Value) || strings.HasPrefix(strings.ToLower(p.Name), "aws:") {
			t.Fatalf("tag %q=%q accepted", p.Name, p.Value)
		}
		if i > 0 && tags[i-1].Name >= p.Name {
			t.Fatalf("tags not sorted and unique: %q", tags)
		}
	}
}

// FuzzTaggingHeader: no x-amz-tagging header makes the parser panic, and
// what it accepts is a valid tag set; an error is always an S3 error.
func FuzzTaggingHeader(f *testing.F) {
	for _, s := range []string{"a=1", "a=1&b=2", "a=1&a=2", "=x", "aws:k=v", "k=%ff", "a;b", "%", "k=" + strings.Repeat("v", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tags, err := parseTaggingHeader(http.Header{"X-Amz-Tagging": {v}})
		if err != nil {
			if c := toS3(err).Code; c != "InvalidArgument" && c != "InvalidTag" {
				t.Fatalf("%q: %v", v, err)
			}
			return
		}
		checkTags(t, tags)
	})
}

// FuzzTaggingXML: the Tagging body parser never panics, and a set it
// accepts is valid.
func FuzzTaggingXML(f *testing.F) {
	for _, s := range []string{
		`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`,
		`<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet/></Tagging>`,
		`<Tagging><TagSet><Tag><Key>a</Key></Tag><Tag><Key>a</Key></Tag></TagSet></Tagging>`,
		`<Other/>`, `<Tagging>`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var doc tagging
		if xml.Unmarshal(b, &doc) != nil {
			return // answered MalformedXML by readBodyChecked
		}
		tags, err := validTags(doc.TagSet, objectTagLimit)
		if err != nil {
			if toS3(err).Code != "InvalidTag" {
				t.Fatalf("%q: %v", b, err)
			}
			return
		}
		checkTags(t, tags)
	})
}
