#!/bin/bash
# CPU per byte of an S3 server under 8 clients of 64 MiB PUTs: the
# server's own user+system time (from /proc/PID/stat) over 6 s in the
# middle of a 24 s nas-bench run against it, divided by the bytes it took.
#
#   bench/cpuperbyte.sh PID URL
#
# PID is the server's process, URL its endpoint; the keys come from
# NAS_ACCESS_KEY and NAS_SECRET_KEY, and NAS_BENCH names the harness
# (default: nas-bench on PATH). Linux only. Run servers one at a time on
# an otherwise idle machine and alternate them.
set -eu
pid=$1 url=$2
bench=${NAS_BENCH:-nas-bench}
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
ticks() { awk '{print $14+$15}' "/proc/$pid/stat"; }
"$bench" --full --workloads put --sizes 64MiB --concurrency 8 --reps 1 --duration 24s \
    --count 1000 --target nas="$url" --out "$out/r.md" >"$out/log" 2>&1 &
run=$!
sleep 6
t0=$(ticks)
sleep 6
t1=$(ticks)
wait $run
mibs=$(grep '^| nas ' "$out/r.md" | head -1 | awk -F'|' '{print $3}' | sed 's/[ ,]//g; s/±.*//')
hz=$(getconf CLK_TCK)
awk -v d=$((t1 - t0)) -v hz="$hz" -v m="$mibs" 'BEGIN {
    cores = d / hz / 6
    printf "server: %.2f cores, %s MiB/s, %.2f ns per byte\n", cores, m, cores * 1e9 / (m * 1048576)
}'
