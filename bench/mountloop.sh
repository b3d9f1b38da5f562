#!/usr/bin/env bash
# One program's view of the mount: a fresh gateway and a mount of it, then
# 10,000 files of 4 KiB created, read back twice, stat'ed and deleted by a
# loop of open/write|read/close and unlink (Python), one rate per phase.
# For an A/B of two builds of nas run it once with each (NAS=path);
# `nas-bench --workloads mount-small` is the record with peers and dropped
# caches, this is the quick loop behind the same-build comparisons in
# RESULTS.md.
#
# Usage: bench/mountloop.sh [--writeback]   (env: NAS, the nas binary,
#        default: built from this tree; DIR, scratch, default a new one;
#        PROF, a directory: CPU profiles of the gateway and of the mount
#        over the first 6 s of the create and delete phases, as
#        PROF/create.gw.prof, PROF/create.mnt.prof and so on; read them
#        with go tool pprof -top -cum)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${DIR:-$(mktemp -d)}
nas=${NAS:-}
if [ -z "$nas" ]; then
	nas="$dir/nas"
	go build -o "$nas" ./cmd/nas
fi
port=$((20000 + RANDOM % 10000))
export NAS_ACCESS_KEY=loopowner NAS_SECRET_KEY=loopownersecret0123456789 NAS_ENDPOINT=http://127.0.0.1:$port
mkdir -p "$dir/mnt"
prof=()
if [ -n "${PROF:-}" ]; then mkdir -p "$PROF"; fi
[ -n "${PROF:-}" ] && prof=(--pprof-addr "127.0.0.1:$((port + 1))")
"$nas" serve --addr "127.0.0.1:$port" --data "$dir/data" --log-level warn "${prof[@]}" >"$dir/serve.log" 2>&1 &
serve=$!
trap 'fusermount3 -u "$dir/mnt" 2>/dev/null || umount -l "$dir/mnt" 2>/dev/null || true; kill $serve 2>/dev/null || true' EXIT
for _ in $(seq 50); do "$nas" repo list >/dev/null 2>&1 && break; sleep 0.2; done
"$nas" repo create loop --unprotected >/dev/null   # main writable, as `aws s3 mb` makes it
[ -n "${PROF:-}" ] && prof=(--pprof-addr "127.0.0.1:$((port + 2))")
"$nas" mount "$dir/mnt" --repo loop --branch main --cache-dir "$dir/cache" "${prof[@]}" "$@" >"$dir/mount.log" 2>&1 &
for _ in $(seq 50); do mountpoint -q "$dir/mnt" && break; sleep 0.2; done
python3 - "$dir/mnt/r1" "${PROF:-}" "$port" <<'PY'
import os, subprocess, sys, time
d, prof, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), 10000
os.makedirs(d, exist_ok=True)
data = os.urandom(4096)
def profile(name):
    if not prof or name not in ("create", "delete"):
        return []
    return [subprocess.Popen(["curl", "-s", "-o", os.path.join(prof, "%s.%s.prof" % (name, who)),
                              "http://127.0.0.1:%d/debug/pprof/profile?seconds=6" % (port + off)])
            for who, off in (("gw", 1), ("mnt", 2))]
def phase(name, op):
    curls = profile(name)
    t = time.time()
    for i in range(n):
        op(os.path.join(d, "f%05d" % i))
    print("%-8s %6.0f files/s" % (name, n / (time.time() - t)), flush=True)
    for c in curls:
        c.wait()
def create(p):
    with open(p, "wb") as f: f.write(data)
def read(p):
    with open(p, "rb") as f: f.read()
phase("create", create)
os.sync(); time.sleep(3)
phase("read", read)
phase("read", read)
phase("stat", os.stat)
phase("delete", os.unlink)
PY
