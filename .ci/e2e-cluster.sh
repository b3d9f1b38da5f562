#!/usr/bin/env bash
# The README's cluster recipe, run for real: contrib/cluster/run.sh starts
# PostgreSQL, a gateway whose bucket holds the chunks, and three gateways; the aws CLI writes through one gateway
# (a multipart upload) and reads through another, a lease made on the
# third is refused outside its paths on the first, and a collection on
# one gateway runs while the others are live and keeps everything.
#
# Usage: .ci/e2e-cluster.sh
set -euo pipefail

export PATH="/usr/local/go/bin:$PATH"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nas-cluster-ci.XXXXXX")
export PGPORT=${PGPORT:-55433} NAS_PORTS="19001 19002 19003" NAS_BUCKET_PORT=19010
export NAS_ACCESS_KEY=AKNASCLUSTERCI000001 NAS_SECRET_KEY=cluster/ci/secret/key/0123456789abcdefgh
PID=
cleanup() {
	local rc=$?
	set +e
	[[ -z $PID ]] || { kill -TERM "$PID"; wait "$PID"; }
	if [[ $rc -ne 0 ]]; then
		for f in "$WORK"/*.log "$WORK"/run.out; do printf '\n--- %s\n' "$f" >&2; tail -n 30 "$f" >&2; done
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
fail() { printf '\nFAIL: %s\n' "$*" >&2; exit 1; }

"$ROOT/contrib/cluster/run.sh" "$WORK" >"$WORK/run.out" 2>&1 &
PID=$!
for _ in $(seq 600); do
	grep -q '; ready$' "$WORK/run.out" && break
	kill -0 "$PID" 2>/dev/null || fail "the cluster script exited"
	sleep 0.1
done
grep -q '; ready$' "$WORK/run.out" || fail "the cluster did not come up"

export AWS_ACCESS_KEY_ID=$NAS_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$NAS_SECRET_KEY AWS_DEFAULT_REGION=us-east-1
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL
AWS=$(type -a -P aws | tail -n1)
"$AWS" --version
head -c 20000000 /dev/urandom >"$WORK/big.bin"
"$AWS" --endpoint-url http://127.0.0.1:19001 s3 mb s3://demo
"$AWS" --endpoint-url http://127.0.0.1:19002 s3 cp --only-show-errors "$WORK/big.bin" s3://demo/data/big.bin
"$AWS" --endpoint-url http://127.0.0.1:19003 s3 cp --only-show-errors s3://demo/data/big.bin "$WORK/back.bin"
cmp "$WORK/big.bin" "$WORK/back.bin" || fail "the object read through another gateway differs"

NAS="$WORK/nas"
export NAS_ENDPOINT=http://127.0.0.1:19003
"$NAS" commit demo main -m "seed from the cluster test" >/dev/null
"$NAS" role put agent --repo demo --paths 'data/**' --actions list,read --fork-from main --max-ttl 1h >/dev/null
"$NAS" lease create demo --role agent --paths 'data/**' --actions list,read --ttl 10m --json >"$WORK/lease.json"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$WORK/lease.json" "$1"; }
branch=$(field branch)
AWS_ACCESS_KEY_ID=$(field access_key_id) AWS_SECRET_ACCESS_KEY=$(field secret_access_key) AWS_SESSION_TOKEN=$(field session_token) \
	"$AWS" --endpoint-url http://127.0.0.1:19001 s3api head-object --bucket demo --key data/big.bin >/dev/null ||
	fail "the lease cannot read its path on another gateway"
if AWS_ACCESS_KEY_ID=$(field access_key_id) AWS_SECRET_ACCESS_KEY=$(field secret_access_key) AWS_SESSION_TOKEN=$(field session_token) \
	"$AWS" --endpoint-url http://127.0.0.1:19002 s3 cp "$WORK/run.out" "s3://demo/elsewhere.txt" 2>/dev/null; then
	fail "the read-only lease wrote on another gateway"
fi
echo "lease on branch $branch: reads on 19001, refused a write on 19002"
# A collection on one gateway while the others are live: they take part
# (commits wait, writes stamp what they reuse), and everything stays.
head -c 6000000 /dev/urandom >"$WORK/gone.bin"
"$AWS" --endpoint-url http://127.0.0.1:19002 s3 cp --only-show-errors "$WORK/gone.bin" s3://demo/data/gone.bin
"$AWS" --endpoint-url http://127.0.0.1:19002 s3 rm --only-show-errors s3://demo/data/gone.bin
sleep 2 # past the collection's retention of 1 s
NAS_ENDPOINT=http://127.0.0.1:19001 "$NAS" gc --retention 1s >"$WORK/gc.out" 2>&1 ||
	fail "a collection beside two live gateways failed: $(cat "$WORK/gc.out")"
for port in 19001 19002 19003; do
	"$AWS" --endpoint-url http://127.0.0.1:$port s3 cp --only-show-errors s3://demo/data/big.bin "$WORK/back.bin"
	cmp "$WORK/big.bin" "$WORK/back.bin" || fail "after the collection, the object read through $port differs"
done
reclaimed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["chunks"]["chunks"])' "$WORK/gc.out")
[[ $reclaimed -gt 0 ]] || fail "the collection beside the others reclaimed no chunk: $(cat "$WORK/gc.out")"
NAS_ENDPOINT=http://127.0.0.1:19002 "$NAS" fsck >"$WORK/fsck.out" 2>&1 || fail "fsck after the collection: $(cat "$WORK/fsck.out")"
echo "collected on 19001 beside 19002 and 19003: $reclaimed chunks"
segs=$("$AWS" --endpoint-url http://127.0.0.1:19010 s3 ls --recursive s3://chunks/segments/ | wc -l)
[[ $segs -gt 0 ]] || fail "no segment object in the chunk bucket"
echo "$segs segment object(s) in the chunk bucket"
echo "cluster recipe passed"
