#!/usr/bin/env bash
# Stat passes through the mount: a fresh gateway and mount, 10,000 files
# of 4 KiB created and read back once, then a stat of every file every
# 1.1 s (past the 1 s TTL) for 9 s, one rate per pass. The quick loop
# behind "The mount follows the gateway's change journal" in RESULTS.md;
# run it once per build (NAS=path) for an A/B.
#
# Usage: bench/statloop.sh   (env: NAS, the nas binary, default: built
#        from this tree; DIR, scratch, default a new one; PROF, a
#        directory: CPU profiles of the gateway and of the mount over 8 s
#        of the passes, PROF/stat.gw.prof and PROF/stat.mnt.prof)
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
if [ -n "${PROF:-}" ]; then mkdir -p "$PROF"; fi
"$nas" serve --addr "127.0.0.1:$port" --data "$dir/data" --log-level warn --pprof-addr "127.0.0.1:$((port + 1))" >"$dir/serve.log" 2>&1 &
serve=$!
trap 'fusermount3 -u "$dir/mnt" 2>/dev/null || umount -l "$dir/mnt" 2>/dev/null || true; kill $serve 2>/dev/null || true' EXIT
for _ in $(seq 50); do "$nas" repo list >/dev/null 2>&1 && break; sleep 0.2; done
"$nas" repo create loop --unprotected >/dev/null
"$nas" mount "$dir/mnt" --repo loop --branch main --cache-dir "$dir/cache" --pprof-addr "127.0.0.1:$((port + 2))" >"$dir/mount.log" 2>&1 &
for _ in $(seq 50); do mountpoint -q "$dir/mnt" && break; sleep 0.2; done
python3 - "$dir/mnt/r1" "${PROF:-}" "$port" <<'PY'
import os, subprocess, sys, time
d, prof, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), 10000
os.makedirs(d, exist_ok=True)
data = os.urandom(4096)
for i in range(n):
    with open(os.path.join(d, "f%05d" % i), "wb") as f: f.write(data)
os.sync(); time.sleep(2)
for i in range(n):
    with open(os.path.join(d, "f%05d" % i), "rb") as f: f.read()
curls = []
if prof:
    curls = [subprocess.Popen(["curl", "-s", "-o", os.path.join(prof, "stat.%s.prof" % who),
              "http://127.0.0.1:%d/debug/pprof/profile?seconds=8" % (port + off)]) for who, off in (("gw", 1), ("mnt", 2))]
rates = []
t0 = time.time()
while time.time() - t0 < 9:
    time.sleep(1.1)
    t = time.time()
    for i in range(n):
        os.stat(os.path.join(d, "f%05d" % i))
    rates.append(n / (time.time() - t))
print("stat passes, files/s:", " ".join("%.0f" % r for r in rates))
for c in curls: c.wait()
PY
