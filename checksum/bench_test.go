package checksum

import (
	"crypto/md5"
	"fmt"
	"hash"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	md5simd "github.com/minio/md5-simd"
)

// Microbenchmarks of the hashing every upload pays, comparable with
// benchstat:
//
//	go test -run '^$' -bench . -count 10 ./checksum > new.txt
//	benchstat old.txt new.txt

func benchData(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// BenchmarkAlgorithm hashes 1 MiB with each x-amz-checksum algorithm.
func BenchmarkAlgorithm(b *testing.B) {
	data := benchData(1 << 20)
	for _, a := range Algorithms {
		b.Run("alg="+string(a), func(b *testing.B) {
			h := a.New()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				h.Reset()
				h.Write(data)
				_ = h.Sum(nil)
			}
		})
	}
}

// BenchmarkSetWriter runs a body through the Set of a PUT: MD5 alone (no
// checksum header, the common case) and MD5 plus a requested algorithm,
// in 32 KiB writes as an HTTP body arrives.
func BenchmarkSetWriter(b *testing.B) {
	data := benchData(1 << 20)
	for _, alg := range []string{"", "CRC32C", "CRC64NVME", "SHA256"} {
		name := alg
		if name == "" {
			name = "md5-only"
		}
		b.Run("with="+name, func(b *testing.B) {
			h := http.Header{}
			if alg != "" {
				h.Set("X-Amz-Sdk-Checksum-Algorithm", alg)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				s, err := FromRequest(h)
				if err != nil {
					b.Fatal(err)
				}
				w := s.Writer()
				for off := 0; off < len(data); off += 32 << 10 {
					w.Write(data[off : off+32<<10])
				}
				if err := s.Verify(nil); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkFromRequest parses the checksum headers of a request.
func BenchmarkFromRequest(b *testing.B) {
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"none", http.Header{}},
		{"content-md5", http.Header{"Content-Md5": {"1B2M2Y8AsgTpgAmY7PhCfg=="}}},
		{"trailer", http.Header{"X-Amz-Trailer": {"x-amz-checksum-crc32c"}, "X-Amz-Sdk-Checksum-Algorithm": {"CRC32C"}}},
	} {
		b.Run(fmt.Sprintf("headers=%s", tc.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FromRequest(tc.h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSetWriterParallel runs many PUT bodies through their Sets at
// once (eight per core), in 1 MiB writes as chunks reach them: the MD5
// cost of concurrent large uploads.
func BenchmarkSetWriterParallel(b *testing.B) {
	data := benchData(1 << 20)
	b.SetBytes(int64(len(data)) * 8)
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s, err := FromRequest(http.Header{})
			if err != nil {
				b.Error(err)
				return
			}
			w := s.Writer()
			for range 8 {
				w.Write(data)
			}
			if err := s.Verify(nil); err != nil {
				b.Error(err)
			}
			_ = s.MD5()
			s.Close()
		}
	})
}

// BenchmarkMD5Lanes hashes n bodies of 1 MiB at the same moment, each in
// one write, with crypto/md5 and in lanes of one md5-simd server: the
// best case for the lanes, every body's blocks reaching the server
// together. Run it on one core to compare the CPU each spends:
//
//	GOMAXPROCS=1 go test -run '^$' -bench MD5Lanes ./checksum
func BenchmarkMD5Lanes(b *testing.B) {
	data := benchData(1 << 20)
	srv := md5simd.NewServer()
	for _, n := range []int{1, 2, 3, 4, 8, 12, 16} {
		for _, impl := range []string{"crypto", "lanes"} {
			b.Run(fmt.Sprintf("bodies=%d/%s", n, impl), func(b *testing.B) {
				hs := make([]hash.Hash, n)
				for i := range hs {
					if impl == "crypto" {
						hs[i] = md5.New()
					} else {
						hs[i] = srv.NewHash()
					}
				}
				b.SetBytes(int64(len(data)) * int64(n))
				for b.Loop() {
					var wg sync.WaitGroup
					for _, h := range hs {
						wg.Go(func() { h.Write(data) })
					}
					wg.Wait()
				}
			})
		}
	}
}
