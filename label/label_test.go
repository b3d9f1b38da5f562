package label

import (
	"errors"
	"reflect"
	"testing"
)

func TestJoinAndScales(t *testing.T) {
	got := Join(Label{Origin: Agent, Sensitivity: Public, Reviewed: true}, Label{Origin: External, Reviewed: true})
	if got != (Label{Origin: External, Sensitivity: Private, Reviewed: true}) {
		t.Fatalf("Join = %+v", got)
	}
	if Join(Label{Reviewed: true}, Label{}).Reviewed {
		t.Fatal("a union with an unreviewed part is reviewed")
	}
	if !Above(Secret, "") || Above(Private, "") || !AtLeast(Secret, Private) || AtLeast(Public, Private) {
		t.Fatal("Above/AtLeast")
	}
	for _, bad := range []Label{{Origin: "web"}, {Sensitivity: "top"}} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%+v) = %v", bad, err)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	for _, o := range Origins {
		for _, s := range Sensitivities {
			for _, r := range []bool{false, true} {
				l := Label{Origin: o, Sensitivity: s, Reviewed: r}
				got, err := Decode(Encode(l))
				if err != nil || got != l {
					t.Fatalf("%+v: %+v %v", l, got, err)
				}
			}
		}
	}
	for _, b := range [][]byte{nil, {1, 3, 0, 0}, {1, 0, 3, 0}, {2, 0, 0, 0}, {1, 0, 0, 2}, {1, 0, 0, 0, 0}} {
		if _, err := Decode(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%v) = %v", b, err)
		}
	}
}

// TestTaint: taint only grows, reviewed content adds its sensitivity but
// not its origin, and writes inherit it.
func TestTaint(t *testing.T) {
	var tn Taint
	if !tn.Clean() || tn.External() || len(tn.List()) != 0 {
		t.Fatal("zero taint is not clean")
	}
	tn, grown := tn.With(Label{})
	if !grown || !reflect.DeepEqual(tn.List(), []string{Owner, Private}) {
		t.Fatalf("%+v", tn)
	}
	if _, grown = tn.With(Label{Sensitivity: Public}); grown {
		t.Fatal("reading public after private grew the taint")
	}
	tn, _ = tn.With(Label{Origin: External, Sensitivity: Secret, Reviewed: true})
	if tn.External() || tn.Sensitivity != Secret {
		t.Fatalf("reviewed external: %+v", tn)
	}
	if tn.Label() != (Label{Origin: Agent, Sensitivity: Secret}) {
		t.Fatalf("write label %+v", tn.Label())
	}
	tn, _ = tn.With(Label{Origin: External, Sensitivity: Public})
	if !tn.External() || !reflect.DeepEqual(tn.Origins, []string{Owner, External}) || tn.Label().Origin != External {
		t.Fatalf("%+v", tn)
	}
	if got := (Taint{Origins: []string{External}, Sensitivity: Public}).Label(); got != (Label{Origin: External, Sensitivity: Public}) {
		t.Fatalf("a session that read only public content writes %+v", got)
	}
	if (Taint{}).Label() != (Label{Origin: Agent, Sensitivity: Private}) {
		t.Fatal("a clean session's writes are agent/private")
	}
}

func TestRules(t *testing.T) {
	rules := []Rule{{Glob: "imports/**", Origin: External}, {Glob: "imports/keys/*", Sensitivity: Secret}, {Glob: "docs/**", Sensitivity: Public, Reviewed: true}}
	if got := Apply(Label{}, "imports/keys/a", rules); got != (Label{Origin: External, Sensitivity: Secret}) {
		t.Fatalf("imports/keys/a: %+v", got)
	}
	if got := Apply(Label{Sensitivity: Secret}, "docs/x.md", rules); got != (Label{Origin: Owner, Sensitivity: Secret, Reviewed: true}) {
		t.Fatalf("a rule never lowers: %+v", got)
	}
	if got := Apply(Label{Sensitivity: Public}, "imports/page.html", rules); got != (Label{Origin: External, Sensitivity: Public}) {
		t.Fatalf("an origin rule raised the sensitivity: %+v", got)
	}
	if got := Apply(Label{Origin: Agent}, "other", rules); got != (Label{Origin: Agent, Sensitivity: Private}) {
		t.Fatalf("no rule: %+v", got)
	}
	for _, bad := range []Rule{{}, {Glob: "x"}, {Glob: "x", Origin: "web"}} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%+v) = %v", bad, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{1, 2, 2, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Decode(b)
		if err == nil {
			if got, err := Decode(Encode(l)); err != nil || got != l {
				t.Fatalf("%v: %+v round-trips to %+v %v", b, l, got, err)
			}
		}
	})
}
