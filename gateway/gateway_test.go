package gateway_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/nastest"
)

func TestServeRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	err := gateway.Serve(context.Background(), http.NotFoundHandler(), gateway.ServeOptions{Addr: "0.0.0.0:0"}, discard())
	if !errors.Is(err, gateway.ErrInsecure) {
		t.Fatalf("plain HTTP on 0.0.0.0: %v, want ErrInsecure", err)
	}
	for addr, loop := range map[string]bool{"127.0.0.1:9000": true, "[::1]:9000": true, "localhost:9000": true, "0.0.0.0:9000": false, ":9000": false, "10.1.2.3:9000": false} {
		if gateway.IsLoopback(addr) != loop {
			t.Errorf("IsLoopback(%q) = %v", addr, !loop)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and returns its paths and
// a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nas test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServeTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	g, err := gateway.Open(gateway.Config{DataDir: t.TempDir(), Owner: auth.Owner{AccessKey: crashAK, SecretKey: crashSK}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- gateway.Serve(ctx, g.Handler(), gateway.ServeOptions{Addr: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile,
			Ready: func(a net.Addr) { ready <- a }}, discard())
	}()
	addr := <-ready
	cl := s3.New(s3.Options{BaseEndpoint: aws.String("https://" + addr.String()), Region: "eu-west-3", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(crashAK, crashSK, ""),
		HTTPClient:  &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}})
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("tls")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tls"), Key: aws.String("k"), Body: bytes.NewReader([]byte("over tls"))}); err != nil {
		t.Fatal(err)
	}
	// Plain HTTP to the TLS port is not served.
	if resp, err := http.Get("http://" + addr.String() + "/"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP answered on the TLS port")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("clean shutdown: %v", err)
	}
}

// TestDeduplication: the same bytes under another key, branch or
// repository store no new chunks, and editing 1% of a large object stores
// little.
func TestDeduplication(t *testing.T) {
	srv := nastest.Start(t)
	ctx := context.Background()
	cl := s3.New(s3.Options{BaseEndpoint: aws.String(srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, "")})
	stored := func() int64 {
		st, err := srv.Gateway.Chunks.Check(ctx, func(p cas.Problem) { t.Error(p) })
		if err != nil {
			t.Fatal(err)
		}
		return st.Bytes
	}
	put := func(bucket, key string, data []byte) {
		t.Helper()
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"one", "two"} {
		if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	// Seeded, so the chunk boundaries the edit meets are the same every
	// run: with random data an edit may touch two or three 4 MiB chunks.
	rng := mrand.NewChaCha8([32]byte{7})
	data := make([]byte, 32<<20)
	rng.Read(data)
	put("one", "a", data)
	base := stored()
	if base < int64(len(data)) {
		t.Fatalf("stored %d bytes for a %d-byte object", base, len(data))
	}
	if _, err := srv.Gateway.Branches.Commit(ctx, "one", "main", branchCommit()); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Gateway.Branches.CreateBranch(ctx, "one", "fork", "main"); err != nil {
		t.Fatal(err)
	}
	put("one", "b", data)
	put("one_fork", "c", data)
	put("two", "d", data)
	if got := stored(); got != base {
		t.Fatalf("the same bytes under other keys, branches and repositories grew the store from %d to %d bytes", base, got)
	}
	edited := bytes.Clone(data)
	rng.Read(edited[16<<20 : 16<<20+len(data)/100])
	put("one", "edited", edited)
	if grown := stored() - base; grown > 6<<20 {
		t.Fatalf("editing 1%% of a 32 MiB object stored %d new bytes", grown)
	}
}

func branchCommit() branch.CommitOptions { return branch.CommitOptions{Message: "dedup test"} }
