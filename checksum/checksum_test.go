package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func sum(a Algorithm, data []byte) []byte {
	h := a.New()
	h.Write(data)
	return h.Sum(nil)
}

func TestKnownVectors(t *testing.T) {
	check := []byte("123456789")
	tests := []struct {
		alg  Algorithm
		want string // hex of the big-endian digest
	}{
		{CRC32, "cbf43926"},
		{CRC32C, "e3069283"},
		{CRC64NVME, "ae8b14860a799888"},
		{SHA1, "f7c3bc1d808e04732adf679965ccc34ca7ae3441"},
		{SHA256, "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"},
	}
	for _, tt := range tests {
		t.Run(string(tt.alg), func(t *testing.T) {
			got := sum(tt.alg, check)
			if h := hexString(got); h != tt.want {
				t.Fatalf("digest %s, want %s", h, tt.want)
			}
			if len(got) != tt.alg.Size() {
				t.Fatalf("Size %d, digest %d bytes", tt.alg.Size(), len(got))
			}
		})
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&15])
	}
	return sb.String()
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Algorithm
		wantErr error
	}{
		{"CRC32", CRC32, nil},
		{"crc32c", CRC32C, nil},
		{"Crc64Nvme", CRC64NVME, nil},
		{"sha1", SHA1, nil},
		{"SHA256", SHA256, nil},
		{"md5", "", ErrInvalidAlgorithm},
		{"", "", ErrInvalidAlgorithm},
		{"SHA-256", "", ErrInvalidAlgorithm},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if h := CRC64NVME.Header(); h != "x-amz-checksum-crc64nvme" {
		t.Errorf("Header = %q", h)
	}
}

func TestFromRequest(t *testing.T) {
	body := []byte("hello, checksums")
	md5sum := md5.Sum(body)
	goodMD5 := b64(md5sum[:])
	crc := b64(sum(CRC32, body))
	sha := b64(sum(SHA256, body))

	tests := []struct {
		name    string
		headers map[string][]string
		trailer http.Header
		wantAlg Algorithm
		newErr  error // from FromRequest
		verErr  error // from Verify
	}{
		{name: "nothing", headers: nil},
		{name: "md5 ok", headers: map[string][]string{"Content-Md5": {goodMD5}}},
		{name: "md5 bad digest", headers: map[string][]string{"Content-Md5": {b64(make([]byte, 16))}}, verErr: ErrBadDigest},
		{name: "md5 malformed", headers: map[string][]string{"Content-Md5": {"zz"}}, newErr: ErrInvalidDigest},
		{name: "md5 short", headers: map[string][]string{"Content-Md5": {b64([]byte("short"))}}, newErr: ErrInvalidDigest},
		{name: "md5 empty", headers: map[string][]string{"Content-Md5": {""}}, newErr: ErrInvalidDigest},
		{name: "md5 twice", headers: map[string][]string{"Content-Md5": {goodMD5, goodMD5}}, newErr: ErrInvalidDigest},
		{name: "crc32 header ok", headers: map[string][]string{"X-Amz-Checksum-Crc32": {crc}}, wantAlg: CRC32},
		{name: "crc32 header mismatch", headers: map[string][]string{"X-Amz-Checksum-Crc32": {b64([]byte{1, 2, 3, 4})}}, wantAlg: CRC32, verErr: ErrChecksumMismatch},
		{name: "crc32 wrong size", headers: map[string][]string{"X-Amz-Checksum-Crc32": {sha}}, newErr: ErrInvalidChecksum},
		{name: "crc32 empty", headers: map[string][]string{"X-Amz-Checksum-Crc32": {""}}, newErr: ErrInvalidChecksum},
		{name: "crc32 not base64", headers: map[string][]string{"X-Amz-Checksum-Crc32": {"!!!!"}}, newErr: ErrInvalidChecksum},
		{name: "unknown alg header", headers: map[string][]string{"X-Amz-Checksum-Md5": {goodMD5}}, newErr: ErrInvalidAlgorithm},
		{name: "two headers", headers: map[string][]string{"X-Amz-Checksum-Crc32": {crc}, "X-Amz-Checksum-Sha256": {sha}}, newErr: ErrMultipleChecksums},
		{name: "header twice", headers: map[string][]string{"X-Amz-Checksum-Crc32": {crc, crc}}, newErr: ErrMultipleChecksums},
		{name: "mode type algorithm ignored", headers: map[string][]string{"X-Amz-Checksum-Mode": {"ENABLED"}, "X-Amz-Checksum-Type": {"FULL_OBJECT"}, "X-Amz-Checksum-Algorithm": {"CRC32"}}},
		{name: "sdk alg only", headers: map[string][]string{"X-Amz-Sdk-Checksum-Algorithm": {"crc32"}}, wantAlg: CRC32},
		{name: "sdk alg agrees", headers: map[string][]string{"X-Amz-Sdk-Checksum-Algorithm": {"SHA256"}, "X-Amz-Checksum-Sha256": {sha}}, wantAlg: SHA256},
		{name: "sdk alg disagrees", headers: map[string][]string{"X-Amz-Sdk-Checksum-Algorithm": {"CRC32"}, "X-Amz-Checksum-Sha256": {sha}}, newErr: ErrMultipleChecksums},
		{name: "sdk alg unknown", headers: map[string][]string{"X-Amz-Sdk-Checksum-Algorithm": {"xxhash"}}, newErr: ErrInvalidAlgorithm},
		{name: "trailer ok", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-crc32"}}, trailer: http.Header{"X-Amz-Checksum-Crc32": {crc}}, wantAlg: CRC32},
		{name: "trailer with sdk alg", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-crc32"}, "X-Amz-Sdk-Checksum-Algorithm": {"CRC32"}}, trailer: http.Header{"X-Amz-Checksum-Crc32": {crc}}, wantAlg: CRC32},
		{name: "trailer missing", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-crc32"}}, wantAlg: CRC32, verErr: ErrMissingTrailer},
		{name: "trailer mismatch", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-crc32"}}, trailer: http.Header{"X-Amz-Checksum-Crc32": {"AAAAAA=="}}, wantAlg: CRC32, verErr: ErrChecksumMismatch},
		{name: "trailer malformed", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-crc32"}}, trailer: http.Header{"X-Amz-Checksum-Crc32": {"AAA"}}, wantAlg: CRC32, verErr: ErrInvalidChecksum},
		{name: "trailer plus header", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-crc32"}, "X-Amz-Checksum-Crc32": {crc}}, newErr: ErrMultipleChecksums},
		{name: "two trailers", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-crc32, x-amz-checksum-sha1"}}, newErr: ErrMultipleChecksums},
		{name: "unknown trailer alg", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-checksum-foo"}}, newErr: ErrInvalidAlgorithm},
		{name: "other trailer ignored", headers: map[string][]string{"X-Amz-Trailer": {"x-amz-meta-foo"}}},
		{name: "md5 and crc both checked", headers: map[string][]string{"Content-Md5": {goodMD5}, "X-Amz-Checksum-Crc32": {crc}}, wantAlg: CRC32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FromRequest(http.Header(tt.headers))
			if !errors.Is(err, tt.newErr) {
				t.Fatalf("FromRequest err = %v, want %v", err, tt.newErr)
			}
			if err != nil {
				return
			}
			s.Writer().Write(body[:5])
			s.Writer().Write(body[5:])
			if a, ok := s.Algorithm(); a != tt.wantAlg || ok != (tt.wantAlg != "") {
				t.Fatalf("Algorithm = %q, %v; want %q", a, ok, tt.wantAlg)
			}
			if !bytes.Equal(s.MD5(), md5sum[:]) {
				t.Fatalf("MD5 wrong")
			}
			if tt.wantAlg != "" {
				if got, want := s.Value(), b64(sum(tt.wantAlg, body)); got != want {
					t.Fatalf("Value = %s, want %s", got, want)
				}
			} else if s.Value() != "" {
				t.Fatalf("Value without algorithm = %q", s.Value())
			}
			err = s.Verify(tt.trailer)
			if !errors.Is(err, tt.verErr) {
				t.Fatalf("Verify err = %v, want %v", err, tt.verErr)
			}
			if errors.Is(tt.verErr, ErrChecksumMismatch) {
				var me *MismatchError
				if !errors.As(err, &me) || me.Algorithm != tt.wantAlg {
					t.Fatalf("Verify err %v is not a MismatchError for %s", err, tt.wantAlg)
				}
				if !strings.Contains(err.Error(), "The "+string(tt.wantAlg)) && !strings.Contains(err.Error(), "the "+string(tt.wantAlg)) {
					t.Fatalf("message %q does not name the algorithm", err)
				}
			}
		})
	}
}

func TestComposite(t *testing.T) {
	parts := [][]byte{[]byte("part one"), []byte("part two"), {}}
	for _, a := range Algorithms {
		var raw [][]byte
		var cat []byte
		for _, p := range parts {
			d := sum(a, p)
			raw = append(raw, d)
			cat = append(cat, d...)
		}
		want := b64(sum(a, cat)) + "-3"
		if got := Composite(a, raw); got != want {
			t.Errorf("%s: Composite = %s, want %s", a, got, want)
		}
	}
	// A vector computed by hand from zlib CRC32 of two parts.
	p1 := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE([]byte("a")))
	p2 := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE([]byte("b")))
	want := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(append(p1, p2...)))
	if got := Composite(CRC32, [][]byte{p1, p2}); got != b64(want)+"-2" {
		t.Errorf("Composite CRC32 = %s", got)
	}
}

func TestCombineCRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := [][]int{
		{},
		{0},
		{5},
		{0, 0, 0},
		{1, 0, 1},
		{1, 1},
		{7, 0, 8193, 3},
		{65536, 65535, 1},
		{1 << 20, 12345, 0, 999},
	}
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		for _, ss := range sizes {
			var all []byte
			var parts []Part
			for _, n := range ss {
				d := make([]byte, n)
				for i := range d {
					d[i] = byte(rng.Uint32())
				}
				all = append(all, d...)
				parts = append(parts, Part{Sum: sum(a, d), Size: int64(n)})
			}
			got, err := CombineCRC(a, parts)
			if err != nil {
				t.Fatal(err)
			}
			if want := b64(sum(a, all)); got != want {
				t.Errorf("%s %v: CombineCRC = %s, want %s", a, ss, got, want)
			}
		}
	}
}

func TestCombineCRCHugeSize(t *testing.T) {
	// Sizes near the int64 limit exercise every table entry; combining with
	// an empty part and then splitting must still be consistent with the
	// identity crc(A||B) where B is zeros: check against a direct small case
	// to be sure large exponents do not overflow the table.
	a := CRC64NVME
	parts := []Part{{Sum: sum(a, []byte("x")), Size: 1}, {Sum: make([]byte, 8), Size: 1<<62 + 12345}}
	if _, err := CombineCRC(a, parts); err != nil {
		t.Fatal(err)
	}
	// crc of zeros: combine(crc(x), crc(zeros(n)), n) vs direct for n=1000.
	z := make([]byte, 1000)
	got, _ := CombineCRC(a, []Part{{Sum: sum(a, []byte("x")), Size: 1}, {Sum: sum(a, z), Size: 1000}})
	if want := b64(sum(a, append([]byte("x"), z...))); got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func TestCombineCRCErrors(t *testing.T) {
	if _, err := CombineCRC(SHA256, nil); !errors.Is(err, ErrInvalidAlgorithm) {
		t.Errorf("SHA256: %v", err)
	}
	if _, err := CombineCRC(CRC32, []Part{{Sum: []byte{1, 2, 3}, Size: 3}}); !errors.Is(err, ErrInvalidChecksum) {
		t.Errorf("short sum: %v", err)
	}
	if _, err := CombineCRC(CRC32, []Part{{Sum: []byte{1, 2, 3, 4}, Size: -1}}); !errors.Is(err, ErrInvalidChecksum) {
		t.Errorf("negative size: %v", err)
	}
}

func BenchmarkCombineCRC64(b *testing.B) {
	parts := make([]Part, 10000)
	for i := range parts {
		parts[i] = Part{Sum: make([]byte, 8), Size: 5 << 30}
	}
	for b.Loop() {
		if _, err := CombineCRC(CRC64NVME, parts); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzFromRequest(f *testing.F) {
	f.Add("Content-Md5", "XUFAKrxLKna5cZ2REBfFkg==", "X-Amz-Checksum-Crc32", "DUoRhQ==", "", "")
	f.Add("X-Amz-Trailer", "x-amz-checksum-crc32c", "X-Amz-Sdk-Checksum-Algorithm", "CRC32C", "", "")
	f.Add("X-Amz-Checksum-Sha256", "", "X-Amz-Checksum-Sha1", "x", "X-Amz-Trailer", ",,x-amz-checksum-")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		h := http.Header{}
		h.Add(k1, v1)
		h.Add(k2, v2)
		h.Add(k3, v3)
		s, err := FromRequest(h)
		if err != nil {
			for _, sentinel := range []error{ErrInvalidDigest, ErrInvalidChecksum, ErrInvalidAlgorithm, ErrMultipleChecksums} {
				if errors.Is(err, sentinel) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		s.Writer().Write([]byte(v1))
		if a, ok := s.Algorithm(); ok && !a.Valid() {
			t.Fatalf("invalid algorithm %q", a)
		}
		_ = s.Value()
		if err := s.Verify(h); err != nil {
			for _, sentinel := range []error{ErrBadDigest, ErrChecksumMismatch, ErrMissingTrailer, ErrInvalidChecksum, ErrMultipleChecksums} {
				if errors.Is(err, sentinel) {
					return
				}
			}
			t.Fatalf("Verify error %v wraps no sentinel", err)
		}
	})
}

// TestMD5ConcurrentLargeBodies hashes many large bodies at once, so most
// of them take md5-simd lanes (more bodies than lanes, so some fall back),
// in writes of uneven sizes, and checks every MD5 and Content-MD5 verdict,
// then that closed Sets gave their lanes back.
func TestMD5ConcurrentLargeBodies(t *testing.T) {
	const bodies = 2*maxLanes + 5
	errs := make(chan error, bodies)
	start := make(chan struct{})
	var firstWrites sync.WaitGroup
	firstWrites.Add(bodies)
	for i := range bodies {
		data := make([]byte, 1<<20+i*4099)
		r := rand.New(rand.NewPCG(uint64(i), 3))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		want := md5.Sum(data)
		h := http.Header{}
		if i%2 == 0 {
			h.Set("Content-Md5", b64(want[:]))
		} else {
			h.Set("Content-Md5", b64(make([]byte, 16))) // wrong
		}
		s, err := FromRequest(h)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			errs <- func() error {
				defer s.Close()
				<-start
				w := s.Writer()
				for off, n := 0, laneMinWrite+i; off < len(data); off, n = off+n, n+777 {
					w.Write(data[off:min(off+n, len(data))])
					if off == 0 {
						// Every body is counted as large before any goes on,
						// so all but the first laneFrom-1 pick a lane or,
						// once maxLanes are taken, crypto/md5.
						firstWrites.Done()
						firstWrites.Wait()
					}
				}
				if got := s.MD5(); !bytes.Equal(got, want[:]) {
					return errors.New("MD5 differs from crypto/md5")
				}
				err := s.Verify(nil)
				if i%2 == 0 && err != nil {
					return err
				}
				if i%2 == 1 && !errors.Is(err, ErrBadDigest) {
					return errors.New("a wrong Content-MD5 was accepted")
				}
				return nil
			}()
		}()
	}
	close(start)
	for range bodies {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	lanes.mu.Lock()
	defer lanes.mu.Unlock()
	if n := lanes.large.Load(); n != 0 {
		t.Errorf("%d large bodies still counted after every Set was closed", n)
	}
	if lanes.made != maxLanes {
		t.Errorf("%d lanes made by %d bodies at once, want %d", lanes.made, bodies, maxLanes)
	}
	if len(lanes.free) != lanes.made {
		t.Errorf("%d lanes free of %d made (at most %d)", len(lanes.free), lanes.made, maxLanes)
	}
}
