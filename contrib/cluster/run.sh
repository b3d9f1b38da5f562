#!/usr/bin/env bash
# Three gateways on one machine over one PostgreSQL database and one S3
# bucket: Debian's postgresql (apt-get install postgresql), a cluster of
# its own in DIR (as the postgres user when run as root, since PostgreSQL
# refuses root), a fourth `nas serve` on port 9010 whose bucket "chunks"
# holds the segments (any S3 store would do: --chunks s3://BUCKET/PREFIX
# --chunks-endpoint URL), and the gateways on ports 9001, 9002 and 9003.
# Put any load balancer in front of them, or point clients at any one.
# NAS_CLUSTER_CHUNKS=dir shares a directory instead of the bucket.
#
# Usage: contrib/cluster/run.sh [DIR]      (default: a new directory in /tmp)
# Environment: NAS_ACCESS_KEY and NAS_SECRET_KEY (the owner's keys, which
# every gateway must share; generated and printed when unset), PGPORT
# (default 5433), NAS_PORTS (default "9001 9002 9003"), NAS_BUCKET_PORT
# (default 9010).
# Ctrl-C (or SIGTERM) stops the gateways, then PostgreSQL.
set -euo pipefail

export PATH="/usr/local/go/bin:$PATH"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/nas-cluster.XXXXXX")}
PGPORT=${PGPORT:-5433}
PORTS=${NAS_PORTS:-9001 9002 9003}
BUCKET_PORT=${NAS_BUCKET_PORT:-9010}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[[ -x $PGBIN/initdb ]] || { echo "no PostgreSQL: apt-get install postgresql" >&2; exit 1; }
as_pg() {
	if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [[ $(id -u) == 0 ]]; then chown postgres "$DIR"; fi

if [[ ! -d $DIR/pg ]]; then
	as_pg "$PGBIN/initdb" -D "$DIR/pg" -A trust -U nas -E UTF8 --locale=C >"$DIR/initdb.log"
fi
as_pg "$PGBIN/pg_ctl" -D "$DIR/pg" -l "$DIR/postgres.log" -w \
	-o "-p $PGPORT -k $DIR -c listen_addresses=127.0.0.1" start >/dev/null
PIDS=()
stop() {
	trap - EXIT INT TERM
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	as_pg "$PGBIN/pg_ctl" -D "$DIR/pg" -m fast stop >/dev/null || true
}
trap stop EXIT INT TERM
as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U nas -d postgres -Atqc \
	"SELECT 1 FROM pg_database WHERE datname = 'nas'" | grep -q 1 ||
	as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U nas nas

(cd "$ROOT" && go build -o "$DIR/nas" ./cmd/nas)
if [[ -z ${NAS_ACCESS_KEY:-} || -z ${NAS_SECRET_KEY:-} ]]; then
	NAS_ACCESS_KEY=AKNAS$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F | head -c 15)
	NAS_SECRET_KEY=$(head -c 30 /dev/urandom | base64 | tr -d '/+=' | head -c 40)
	echo "owner keys: NAS_ACCESS_KEY=$NAS_ACCESS_KEY NAS_SECRET_KEY=$NAS_SECRET_KEY"
fi
export NAS_ACCESS_KEY NAS_SECRET_KEY
META="postgres://nas@127.0.0.1:$PGPORT/nas?sslmode=disable"
ready() {
	for _ in $(seq 100); do
		curl -fsS "http://127.0.0.1:$1/_nas/health/ready" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
CHUNKS=("--chunks" "$DIR/chunks")
if [[ ${NAS_CLUSTER_CHUNKS:-s3} == s3 ]]; then
	"$DIR/nas" serve --addr "127.0.0.1:$BUCKET_PORT" --data "$DIR/bucket" --log-file "$DIR/bucket.log" &
	PIDS+=($!)
	ready "$BUCKET_PORT" || { echo "the bucket gateway did not start" >&2; exit 1; }
	NAS_ENDPOINT="http://127.0.0.1:$BUCKET_PORT" "$DIR/nas" repo create chunks --unprotected >/dev/null 2>&1 || true
	export NAS_CHUNKS_ACCESS_KEY=$NAS_ACCESS_KEY NAS_CHUNKS_SECRET_KEY=$NAS_SECRET_KEY
	CHUNKS=("--chunks" "s3://chunks/segments" "--chunks-endpoint" "http://127.0.0.1:$BUCKET_PORT")
	echo "chunk bucket s3://chunks/segments on http://127.0.0.1:$BUCKET_PORT"
fi
for port in $PORTS; do
	"$DIR/nas" serve --addr "127.0.0.1:$port" --data "$DIR/gw$port" --meta "$META" \
		"${CHUNKS[@]}" --keys "$DIR/keys" --gc-interval 0 --log-file "$DIR/gw$port.log" &
	PIDS+=($!)
done
for port in $PORTS; do
	ready "$port" || echo "gateway on $port is not ready (see $DIR/gw$port.log)" >&2
	echo "gateway http://127.0.0.1:$port (log $DIR/gw$port.log)"
done
echo "metadata $META; chunks ${CHUNKS[*]:1}; ready"
wait
