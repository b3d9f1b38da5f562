package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "123": 123, "1KiB": 1024, "1k": 1024, "1.5MiB": 3 << 19, "10GB": 10e9, "2 GiB": 2 << 30, "7B": 7, "1T": 1 << 40,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "x", "1XB", "GiB", "1e400", "NaN", "9999999TiB"} {
		if v, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, v)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1", "1.5GiB", "10 MB", "-3", "1e9K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err == nil && v < 0 {
			t.Fatalf("Parse(%q) = %d", s, v)
		}
	})
}
