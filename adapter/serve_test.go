package adapter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentnas/nas/adapter"
)

// memServer shows a few objects held in memory.
type memServer struct {
	objs    []adapter.Object
	data    map[string]string
	limits  []int
	readErr error
}

func (m *memServer) Name() string { return "mem" }

func (m *memServer) List(_ context.Context, after string, limit int) ([]adapter.Object, bool, error) {
	m.limits = append(m.limits, limit)
	var out []adapter.Object
	for _, o := range m.objs {
		if o.Key > after {
			out = append(out, o)
		}
	}
	more := len(out) > limit
	return out[:min(limit, len(out))], more, nil
}

func (m *memServer) Stat(_ context.Context, key string) (adapter.Object, error) {
	for _, o := range m.objs {
		if o.Key == key {
			return o, nil
		}
	}
	return adapter.Object{}, &adapter.Error{Code: adapter.CodeNotFound, Message: key}
}

func (m *memServer) Read(_ context.Context, key, version string, off, n int64) (io.ReadCloser, int64, error) {
	if m.readErr != nil {
		return nil, 0, m.readErr
	}
	b := m.data[key]
	b = b[min(int(off), len(b)):min(int(off+n), len(b))]
	return io.NopCloser(strings.NewReader(b)), int64(len(b)), nil
}

// exchange sends the request lines to Serve and returns what it wrote.
func exchange(t *testing.T, s adapter.Server, lines ...string) (*bufio.Reader, error) {
	t.Helper()
	var out bytes.Buffer
	err := adapter.Serve(context.Background(), strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, s)
	return bufio.NewReader(&out), err
}

func answer(t *testing.T, r *bufio.Reader) adapter.Response {
	t.Helper()
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	var res adapter.Response
	if err := json.Unmarshal(line, &res); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return res
}

func TestServe(t *testing.T) {
	m := &memServer{objs: []adapter.Object{{Key: "a", Size: 5, Version: "v1"}, {Key: "b", Size: 3, Version: "v2"}},
		data: map[string]string{"a": "alpha", "b": "bee"}}
	r, err := exchange(t, m,
		`{"op":"hello","protocol":1}`,
		`{"op":"list","after":"","limit":100000}`,
		`{"op":"list","after":"a","limit":1}`,
		`{"op":"stat","key":"missing"}`,
		`{"op":"read","key":"a","version":"v1","offset":1,"length":10}`,
		`{"op":"read","key":"a","version":"v1","offset":-1,"length":1}`,
		`not json`,
		`{"op":"delete","key":"a"}`,
	)
	if err != nil {
		t.Fatal(err)
	}
	if res := answer(t, r); res.Protocol != adapter.Protocol || res.Name != "mem" {
		t.Errorf("hello: %+v", res)
	}
	if res := answer(t, r); len(res.Objects) != 2 || res.More || m.limits[0] != adapter.MaxPage {
		t.Errorf("list: %+v (limit %v)", res, m.limits)
	}
	if res := answer(t, r); len(res.Objects) != 1 || res.Objects[0].Key != "b" || res.More {
		t.Errorf("list after a: %+v", res)
	}
	if res := answer(t, r); res.Error == nil || res.Error.Code != adapter.CodeNotFound || res.Object != nil {
		t.Errorf("stat of a missing key: %+v", res)
	}
	res := answer(t, r)
	body := make([]byte, res.Length)
	if _, err := io.ReadFull(r, body); err != nil || res.Length != 4 || string(body) != "lpha" || res.Version != "v1" {
		t.Errorf("read: %+v %q %v", res, body, err)
	}
	for _, what := range []string{"negative offset", "not JSON", "unknown op"} {
		if res := answer(t, r); res.Error == nil || res.Error.Code != adapter.CodeInvalid {
			t.Errorf("%s: %+v", what, res)
		}
	}

	m.readErr = errors.New("database down")
	r, _ = exchange(t, m, `{"op":"read","key":"a","version":"v1","offset":0,"length":5}`)
	if res := answer(t, r); res.Error == nil || res.Error.Code != adapter.CodeUnavailable {
		t.Errorf("read failing: %+v", res)
	}
}

// FuzzServe: whatever the gateway side sends, Serve answers in step or
// stops with an error; it never panics and never announces more bytes
// than asked.
func FuzzServe(f *testing.F) {
	f.Add([]byte(`{"op":"read","key":"a","version":"v1","offset":0,"length":3}` + "\n"))
	f.Add([]byte(`{"op":"list","after":"\u0000","limit":-5}` + "\n" + `{"op":"stat","key":"b"}`))
	f.Add([]byte("{\"op\":\"read\",\"offset\":9223372036854775807,\"length\":9223372036854775807}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		m := &memServer{objs: []adapter.Object{{Key: "a", Size: 5, Version: "v1"}}, data: map[string]string{"a": "alpha"}}
		var out bytes.Buffer
		_ = adapter.Serve(context.Background(), bytes.NewReader(in), &out, m)
	})
}

func TestPage(t *testing.T) {
	objs := []adapter.Object{{Key: "a"}, {Key: "b"}, {Key: "c"}}
	keys := func(p []adapter.Object) string {
		var s []string
		for _, o := range p {
			s = append(s, o.Key)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		after string
		limit int
		want  string
		more  bool
	}{
		{"", 2, "a,b", true}, {"a", 2, "b,c", false}, {"b", 5, "c", false}, {"aa", 1, "b", true}, {"c", 2, "", false}, {"", 0, "", true},
	} {
		p, more := adapter.Page(objs, c.after, c.limit)
		if keys(p) != c.want || more != c.more {
			t.Errorf("Page(%q, %d) = %s %v, want %s %v", c.after, c.limit, keys(p), more, c.want, c.more)
		}
	}
}

func TestCheckKey(t *testing.T) {
	for k, ok := range map[string]bool{
		"a": true, "a/b.txt": true, "dir/sub/ü.csv": true,
		"": false, "/a": false, "a/": false, "a//b": false, "./a": false, "a/../b": false, "..": false,
		"a\x00b": false, "a\nb": false, "\xff": false, strings.Repeat("k", adapter.MaxKey+1): false,
	} {
		if err := adapter.CheckKey(k); (err == nil) != ok {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
	}
}
