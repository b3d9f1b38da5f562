package main

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentnas/nas/bytesize"
	"github.com/agentnas/nas/cas/s3seg"
	"github.com/agentnas/nas/gateway"
)

// chunkFlags say where chunk segments live: a directory, or a bucket
// (s3://BUCKET/PREFIX) with its endpoint and keys.
type chunkFlags struct {
	chunks, endpoint, region string
	accessKey, secretKey     string
	skew                     time.Duration
	direct                   bool
	minFree                  minFreeFlag
}

// minFreeFlag is --min-free: "auto" (the default floor), a size, or 0
// for no floor.
type minFreeFlag struct {
	v   int64 // gateway.Config.MinFree: 0 auto, negative off
	set string
}

// String returns the flag as given, "auto" by default.
func (f *minFreeFlag) String() string { return cmpOr(f.set, "auto") }

// Set parses "auto" or a size (bytesize.Parse); 0 turns the floor off.
func (f *minFreeFlag) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		f.v, f.set = 0, ""
		return nil
	}
	n, err := bytesize.Parse(s)
	if err != nil {
		return err
	}
	f.v, f.set = n, s
	if n == 0 {
		f.v = -1
	}
	return nil
}

// Type names the flag's kind in help texts.
func (f *minFreeFlag) Type() string { return "size" }

// add defines the flags on f.
func (o *chunkFlags) add(f *pflag.FlagSet) {
	f.StringVar(&o.chunks, "chunks", "", "where chunk segments live: a directory, or s3://BUCKET/PREFIX; gateways sharing --meta must share it (default DATA/chunks)")
	f.StringVar(&o.endpoint, "chunks-endpoint", "", "with --chunks s3://: the S3 endpoint URL (default AWS S3)")
	f.StringVar(&o.region, "chunks-region", "", "with --chunks s3://: the bucket's region (default us-east-1)")
	f.StringVar(&o.accessKey, "chunks-access-key", "", "with --chunks s3://: the access key (prefer $NAS_CHUNKS_ACCESS_KEY)")
	f.StringVar(&o.secretKey, "chunks-secret-key", "", "with --chunks s3://: the secret key (prefer $NAS_CHUNKS_SECRET_KEY: a command line is visible to every user)")
	f.BoolVar(&o.direct, "direct-writes", false, "write the bytes of large uploads past their first MiB with O_DIRECT: less CPU under many concurrent large PUTs, but GETs soon after read from the disk (see README, Performance)")
	f.Var(&o.minFree, "min-free", "free space uploads leave on the disks of the data directory and of --chunks: a write that finds less is refused with StorageFull (507; ENOSPC on a mount), so deletes, commits and gc still find room (auto: the smaller of 1GiB and 5% of each disk; 0: no floor)")
	f.DurationVar(&o.skew, "clock-skew", 0, "with --meta: the clock difference tolerated between the gateways and the chunk bucket; a collection keeps segments written within it of its start (default 1m)")
}

// apply sets c's chunk store from the flags, the keys falling back to
// the environment.
func (o *chunkFlags) apply(c *gateway.Config) {
	c.ClockSkew = o.skew
	c.DirectWrites = o.direct
	c.MinFree = o.minFree.v
	if !s3seg.IsURL(o.chunks) {
		c.ChunksDir = o.chunks
		return
	}
	c.Chunks = &s3seg.Config{URL: o.chunks, Endpoint: o.endpoint, Region: o.region,
		AccessKey: cmpOr(o.accessKey, os.Getenv("NAS_CHUNKS_ACCESS_KEY")), SecretKey: cmpOr(o.secretKey, os.Getenv("NAS_CHUNKS_SECRET_KEY"))}
}

// cmpOr is a, or b when a is empty.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
