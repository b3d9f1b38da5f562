#!/usr/bin/env bash
# Runs ceph/s3-tests against a fresh `nas serve` on 127.0.0.1:8000 and
# prints pytest's summary. See compat/s3-tests.md for the selection.
#
# Usage: compat/run-s3-tests.sh S3TESTS_DIR OUT [extra pytest args]
# Needs: python3 with boto3, pytest, munch, gevent, isodate, pytz,
# httplib2, lxml (Debian: python3-{boto3,pytest,munch,gevent,isodate,tz,
# httplib2,lxml}).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tests=$(cd "$1" && pwd)
out=$2
shift 2
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$here/.." && go build -o "$work/nas" ./cmd/nas)
export NAS_ACCESS_KEY=0555b35654ad1656d804
export NAS_SECRET_KEY='h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q=='
"$work/nas" serve --addr 127.0.0.1:8000 --data "$work/data" --log-level error >"$work/serve.log" 2>&1 &
pid=$!
sleep 1.5
oid=$(printf 'agentnas owner %s' "$NAS_ACCESS_KEY" | sha256sum | cut -d' ' -f1)
sed "s/@OWNER_ID@/$oid/" "$here/s3tests.conf" >"$work/s3tests.conf"
cd "$tests"
S3TEST_CONF=$work/s3tests.conf python3 -m pytest -q -p no:cacheprovider -rA --tb=line \
	-m "$(cat "$here/markers.txt")" -k "$(cat "$here/names.txt")" \
	s3tests/functional/test_s3.py s3tests/functional/test_headers.py "$@" >"$out" 2>&1 || true
tail -n 1 "$out"
printf 'panics in the server log: %s\n' "$(grep -c panic "$work/serve.log" || true)"
