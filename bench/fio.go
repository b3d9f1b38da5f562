package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// The fio workload: JuiceFS's own sequential benchmark (fio writes a
// 1 GiB file in 1 MiB blocks, then reads it back after the caches are
// dropped), run by fio itself against our mount, every --mount-peer and a
// local directory in the same run. It needs fio on PATH (Debian's fio
// package) and is skipped without it.

func init() {
	Register(Workload{Name: "mount-fio", Doc: "FUSE: fio sequential 1 GiB write (ending with fsync) and read after dropping caches, mount vs peers vs a local directory", Run: runMountFio})
}

// fioArgs is what the workload asks fio, in its own words.
func fioArgs(dir, rw string, size int64) []string {
	return []string{"--name=seq", "--directory=" + dir, "--filename=fio.dat", "--rw=" + rw, "--bs=1M",
		"--size=" + strconv.FormatInt(size, 10), "--numjobs=1", "--ioengine=psync", "--end_fsync=1",
		"--output-format=json"}
}

// fioReport is the part of fio's JSON report the workload reads.
type fioReport struct {
	Jobs []struct {
		Read  fioSide `json:"read"`
		Write fioSide `json:"write"`
	} `json:"jobs"`
}

type fioSide struct {
	IOBytes int64 `json:"io_bytes"`
	Runtime int64 `json:"runtime"` // ms
}

// runFio runs one fio job and returns its sample: the bytes and time fio
// reports for the side rw measures.
func runFio(ctx context.Context, dir, rw string, size int64) (Sample, error) {
	cmd := exec.CommandContext(ctx, "fio", fioArgs(dir, rw, size)...)
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Sample{}, fmt.Errorf("fio %s in %s: %w: %s", rw, dir, err, stderr.String())
	}
	var rep fioReport
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Jobs) != 1 {
		return Sample{}, fmt.Errorf("fio %s: unreadable report (%v)", rw, err)
	}
	side := rep.Jobs[0].Write
	if rw == "read" {
		side = rep.Jobs[0].Read
	}
	if side.IOBytes != size || side.Runtime <= 0 {
		return Sample{}, fmt.Errorf("fio %s moved %d bytes of %d in %d ms", rw, side.IOBytes, size, side.Runtime)
	}
	d := time.Duration(side.Runtime) * time.Millisecond
	return Sample{Ops: 1, Bytes: side.IOBytes, Elapsed: d, Latency: []time.Duration{d}}, nil
}

// fioSubject is one place fio runs in.
type fioSubject struct {
	name, dir, note string
	baseline        bool
	skip            string
	cold            func() error // empties what the subject caches, before a read
}

func runMountFio(ctx context.Context, e *Env) ([]*Result, error) {
	size := sizesFor(e.Profile.Mode).seq
	skipAll := ""
	if _, err := exec.LookPath("fio"); err != nil {
		skipAll = "no fio on PATH (apt-get install fio)"
	}
	mt, skip, err := mountIfCan(ctx, e, "fio", nil)
	if err != nil {
		return nil, err
	}
	if mt != nil {
		defer mt.close()
	}
	subjects, err := fioSubjects(e, mt, skip)
	if err != nil {
		return nil, err
	}
	var writes, reads []Subject
	for _, s := range subjects {
		s.skip = cmp.Or(skipAll, s.skip)
		writes = append(writes, Subject{Name: s.name, Skip: s.skip, Baseline: s.baseline, Note: s.note,
			Measure: func(ctx context.Context, rep int) (Sample, error) {
				os.Remove(filepath.Join(s.dir, "fio.dat"))
				return runFio(ctx, s.dir, "write", size)
			}})
		reads = append(reads, Subject{Name: s.name, Skip: s.skip, Baseline: s.baseline, Note: s.note,
			Measure: func(ctx context.Context, rep int) (Sample, error) {
				if err := s.cold(); err != nil {
					return Sample{}, err
				}
				return runFio(ctx, s.dir, "read", size)
			}})
	}
	wrows, err := Compare(ctx, e.Profile.Reps, writes, ByThroughput)
	if err != nil {
		return nil, err
	}
	rrows, err := Compare(ctx, e.Profile.Reps, reads, ByThroughput)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%d MiB", size>>20)
	cmdline := "fio " + fmt.Sprint(fioArgs("DIR", "write|read", size))
	return []*Result{
		{Case: "fio sequential write " + name, Reference: "nas mount", Rows: wrows, Notes: []string{cmdline}},
		{Case: "fio sequential read " + name + " after dropping caches", Reference: "nas mount", Rows: rrows},
	}, nil
}

// fioSubjects are our mount, every peer and a local directory, each with
// a directory of its own.
func fioSubjects(e *Env, mt *mounted, skip string) ([]fioSubject, error) {
	var out []fioSubject
	if mt == nil {
		out = append(out, fioSubject{name: "nas mount", skip: skip})
	} else {
		f := &seqFiles{e: e, mt: mt}
		out = append(out, fioSubject{name: "nas mount", dir: mt.dir, cold: f.cold,
			note: "the default mount (durable close); the read starts with an empty chunk cache and the gateway's files and the mount's pages out of the page cache"})
	}
	for _, p := range e.MountPeers {
		d, err := e.PeerDir(p, "fio")
		if err != nil {
			return nil, err
		}
		out = append(out, fioSubject{name: p.Name, dir: d, note: "its file out of the kernel's page cache before the read (its own local cache is not emptied)",
			cold: func() error { _, err := EvictDir(d, e.DropCaches); return err }})
	}
	local, err := e.TempDir("local-fio")
	if err != nil {
		return nil, err
	}
	out = append(out, fioSubject{name: "local dir", dir: local, baseline: true, note: "out of the page cache before the read",
		cold: func() error { _, err := EvictDir(local, e.DropCaches); return err }})
	return out, nil
}
