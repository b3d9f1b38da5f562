#!/usr/bin/env bash
# End-to-end test of the gateway with real command-line S3 clients.
#
# Builds ./cmd/nas, starts `nas serve` on a free loopback port with a fresh
# data directory, and runs one scenario per client (every distinct aws CLI
# on PATH, rclone, s3cmd): on main, then on a branch forked from main and
# addressed through its alias bucket REPO_BRANCH. Finally it stops the
# server with SIGTERM and runs the offline `nas fsck --data DIR`.
#
# Usage: .ci/e2e-clients.sh            (from anywhere inside the checkout)
# Environment:
#   E2E_CLIENTS="awsv1 awsv2 rclone s3cmd"  only run these clients (default: all found)
#   E2E_KEEP=1                              keep the temp dir (binary, data, logs)
set -euo pipefail

export PATH="/usr/local/go/bin:$PATH"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T0=$SECONDS

log() { printf '\n=== %s\n' "$*"; }
step() { printf -- '--- %s\n' "$*"; }
# run CMD...: print and run a command (its output goes to the terminal).
run() { printf '    $ %s\n' "$*" >&2; "$@"; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/nas-e2e.XXXXXX")
BIN=$WORK/nas
DATA=$WORK/data
SERVER_LOG=$WORK/server.log
SERVER_PID=

FAIL_MSG=
fail() {
	FAIL_MSG=$*
	printf '\nFAIL: %s\n' "$*" >&2
	exit 1
}

# bug MESSAGE: a failure the run can work around; reported (and the script
# fails) at the end, after the remaining checks have run.
BUGS=()
bug() {
	printf '\nBUG: %s\n' "$*" >&2
	BUGS+=("$*")
}

cleanup() {
	local rc=$?
	set +e
	if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	if [[ $rc -ne 0 ]]; then
		printf '\n=== e2e FAILED (exit %d) after %ds; last 50 lines of the server log (%s):\n' "$rc" $((SECONDS - T0)) "$SERVER_LOG" >&2
		tail -n 50 "$SERVER_LOG" >&2 2>/dev/null
		[[ -z $FAIL_MSG ]] || printf '\n=== e2e FAILED: %s\n' "$FAIL_MSG" >&2
		if [[ ${#BUGS[@]} -gt 0 ]]; then
			printf '\n=== e2e FAILED: %d gateway bug(s):\n' "${#BUGS[@]}" >&2
			printf '  - %s\n' "${BUGS[@]}" >&2
		fi
	fi
	if [[ ${E2E_KEEP:-} == 1 ]]; then
		echo "kept $WORK" >&2
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- clients
# Isolate the clients from any configuration of the machine.
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_CA_BUNDLE \
	NAS_ENDPOINT NAS_SESSION_TOKEN
export NAS_ACCESS_KEY=E2EACCESSKEY000001
export NAS_SECRET_KEY=e2e-secret-key-for-the-client-tests-0001
export AWS_ACCESS_KEY_ID=$NAS_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$NAS_SECRET_KEY
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
export AWS_CONFIG_FILE=$WORK/aws-config AWS_SHARED_CREDENTIALS_FILE=$WORK/aws-credentials
export AWS_PAGER= AWS_EC2_METADATA_DISABLED=true
: >"$AWS_CONFIG_FILE"
: >"$AWS_SHARED_CREDENTIALS_FILE"

# Clients: NAME -> kind and command. Each distinct aws binary (by real path)
# is one client named after its major version: awsv1, awsv2 (awsv1-2, ... if
# two binaries have the same major version).
declare -a CLIENTS=()
declare -A KIND=() AWSBIN=()
declare -A seen_aws=()
while IFS= read -r a; do
	[[ -n $a ]] || continue
	real=$a
	if [[ $a == */.pyenv/shims/* ]] && command -v pyenv >/dev/null; then
		real=$(pyenv which aws 2>/dev/null || echo "$a")
	fi
	real=$(readlink -f "$real")
	[[ -z ${seen_aws[$real]:-} ]] || continue
	seen_aws[$real]=1
	if ! ver=$("$a" --version 2>&1 | head -n1); then
		printf 'WARNING: skipping %s: `%s --version` failed: %s\n' "$a" "$a" "$ver" >&2
		continue
	fi
	major=$(sed -n 's#^aws-cli/\([0-9]*\)\..*#\1#p' <<<"$ver")
	[[ -n $major ]] || fail "cannot parse the version of $a: $ver"
	name=awsv$major
	n=1
	while [[ -n ${KIND[$name]:-} ]]; do n=$((n + 1)); name=awsv$major-$n; done
	KIND[$name]=aws
	AWSBIN[$name]=$a
	CLIENTS+=("$name")
done < <(type -a -P aws || true)
if command -v rclone >/dev/null; then KIND[rclone]=rclone; CLIENTS+=(rclone); fi
if command -v s3cmd >/dev/null; then KIND[s3cmd]=s3cmd; CLIENTS+=(s3cmd); fi

if [[ -n ${E2E_CLIENTS:-} ]]; then
	sel=()
	for c in $E2E_CLIENTS; do
		[[ -n ${KIND[$c]:-} ]] || fail "E2E_CLIENTS names $c, which was not found (found: ${CLIENTS[*]})"
		sel+=("$c")
	done
	CLIENTS=("${sel[@]}")
else
	have_aws=0
	for c in "${CLIENTS[@]}"; do [[ ${KIND[$c]} != aws ]] || have_aws=1; done
	[[ $have_aws == 1 ]] || fail "no aws CLI on PATH (install awscli)"
	[[ -n ${KIND[rclone]:-} ]] || fail "rclone not on PATH (install rclone)"
	[[ -n ${KIND[s3cmd]:-} ]] || fail "s3cmd not on PATH (install s3cmd)"
fi

log "clients"
for c in "${CLIENTS[@]}"; do
	case ${KIND[$c]} in
	aws) printf '%-8s %s: %s\n' "$c" "${AWSBIN[$c]}" "$("${AWSBIN[$c]}" --version 2>&1 | head -n1)" ;;
	rclone) printf '%-8s %s: %s\n' "$c" "$(command -v rclone)" "$(rclone version 2>&1 | head -n1)" ;;
	s3cmd) printf '%-8s %s: %s\n' "$c" "$(command -v s3cmd)" "$(s3cmd --version 2>&1 | head -n1)" ;;
	esac
done

# ---------------------------------------------------------------- server
log "build"
(cd "$ROOT" && run go build -o "$BIN" ./cmd/nas)

log "start the gateway"
mkdir -p "$DATA"
"$BIN" serve --addr 127.0.0.1:0 --data "$DATA" --log-level debug >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
ENDPOINT=
for _ in $(seq 300); do
	ENDPOINT=$(sed -n 's#^nas: serving S3 and the control API on \(http://[^ ]*\) .*#\1#p' "$SERVER_LOG" | head -n1)
	[[ -z $ENDPOINT ]] || break
	kill -0 "$SERVER_PID" 2>/dev/null || fail "the gateway exited during start-up"
	sleep 0.1
done
[[ -n $ENDPOINT ]] || fail "the gateway did not report its address within 30s"
PORT=${ENDPOINT##*:}
echo "gateway pid $SERVER_PID at $ENDPOINT (data $DATA, log $SERVER_LOG)"
nas() { "$BIN" --endpoint "$ENDPOINT" "$@"; }
ok=0
for _ in $(seq 100); do
	if nas fsck >/dev/null 2>&1; then ok=1; break; fi
	sleep 0.1
done
[[ $ok == 1 ]] || { nas fsck || true; fail "the gateway does not answer a signed control API call (nas fsck)"; }
run nas fsck

# rclone: configured entirely from the environment (remote "nas:").
export RCLONE_CONFIG=$WORK/rclone.conf
: >"$RCLONE_CONFIG"
export RCLONE_CONFIG_NAS_TYPE=s3 RCLONE_CONFIG_NAS_PROVIDER=Other \
	RCLONE_CONFIG_NAS_ENDPOINT=$ENDPOINT RCLONE_CONFIG_NAS_ACCESS_KEY_ID=$NAS_ACCESS_KEY \
	RCLONE_CONFIG_NAS_SECRET_ACCESS_KEY=$NAS_SECRET_KEY RCLONE_CONFIG_NAS_REGION=us-east-1 \
	RCLONE_CONFIG_NAS_FORCE_PATH_STYLE=true
RCLONE_FLAGS=()

# s3cmd: a generated config; host_bucket without %(bucket)s means path style.
S3CFG=$WORK/s3cfg
cat >"$S3CFG" <<EOF
[default]
access_key = $NAS_ACCESS_KEY
secret_key = $NAS_SECRET_KEY
host_base = 127.0.0.1:$PORT
host_bucket = 127.0.0.1:$PORT
bucket_location = us-east-1
use_https = False
signature_v2 = False
check_ssl_certificate = False
progress_meter = False
EOF

# ---------------------------------------------------------------- client verbs
# Every verb takes the client name first; buckets are bucket names, keys
# object keys, files local paths.
c_mb() { # CLIENT BUCKET
	case ${KIND[$1]} in
	aws) run "${AWSBIN[$1]}" --endpoint-url "$ENDPOINT" s3 mb "s3://$2" ;;
	rclone) run rclone mkdir "nas:$2" ;;
	s3cmd) run s3cmd -c "$S3CFG" mb "s3://$2" ;;
	esac
}
c_put() { # CLIENT FILE BUCKET KEY (large files go multipart)
	case ${KIND[$1]} in
	aws) run "${AWSBIN[$1]}" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "$2" "s3://$3/$4" ;;
	rclone) run rclone copyto "${RCLONE_FLAGS[@]}" --s3-upload-cutoff 5M --s3-chunk-size 5M "$2" "nas:$3/$4" ;;
	s3cmd) run s3cmd -c "$S3CFG" --no-progress --multipart-chunk-size-mb=5 put "$2" "s3://$3/$4" >/dev/null ;;
	esac
}
c_get() { # CLIENT BUCKET KEY FILE
	rm -f "$4"
	case ${KIND[$1]} in
	aws) run "${AWSBIN[$1]}" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "s3://$2/$3" "$4" ;;
	rclone) run rclone copyto "nas:$2/$3" "$4" ;;
	s3cmd) run s3cmd -c "$S3CFG" --no-progress --force get "s3://$2/$3" "$4" >/dev/null ;;
	esac
}
c_cp() { # CLIENT BUCKET SRCKEY DSTKEY (server-side copy)
	case ${KIND[$1]} in
	aws) run "${AWSBIN[$1]}" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "s3://$2/$3" "s3://$2/$4" ;;
	rclone) run rclone copyto "${RCLONE_FLAGS[@]}" "nas:$2/$3" "nas:$2/$4" ;;
	s3cmd) run s3cmd -c "$S3CFG" cp "s3://$2/$3" "s3://$2/$4" >/dev/null ;;
	esac
}
c_rm() { # CLIENT BUCKET KEY
	case ${KIND[$1]} in
	aws) run "${AWSBIN[$1]}" --endpoint-url "$ENDPOINT" s3 rm --only-show-errors "s3://$2/$3" ;;
	rclone) run rclone deletefile "${RCLONE_FLAGS[@]}" "nas:$2/$3" ;;
	s3cmd) run s3cmd -c "$S3CFG" del "s3://$2/$3" >/dev/null ;;
	esac
}
c_ls() { # CLIENT BUCKET -> prints every key with its size, "KEY SIZE", sorted
	local out
	case ${KIND[$1]} in
	aws)
		out=$(run "${AWSBIN[$1]}" --endpoint-url "$ENDPOINT" s3 ls --recursive "s3://$2/") || return 1
		awk 'NF >= 4 {print $4, $3}' <<<"$out" ;;
	rclone)
		out=$(run rclone lsl "nas:$2") || return 1
		awk 'NF >= 4 {print $4, $1}' <<<"$out" ;;
	s3cmd)
		out=$(run s3cmd -c "$S3CFG" ls --recursive "s3://$2") || return 1
		awk -v p="s3://$2/" 'NF >= 4 && index($4, p) == 1 {print substr($4, length(p) + 1), $3}' <<<"$out" ;;
	esac | LC_ALL=C sort
}

# expect_ls CLIENT BUCKET "KEY SIZE" ...: the listing is exactly these.
expect_ls() {
	local client=$1 bucket=$2
	shift 2
	local want got
	want=$(printf '%s\n' "$@" | LC_ALL=C sort)
	got=$(c_ls "$client" "$bucket") || fail "$client: listing $bucket failed"
	if [[ $got != "$want" ]]; then
		printf 'expected listing of %s:\n%s\nactual:\n%s\n' "$bucket" "$want" "$got" >&2
		fail "$client: listing of $bucket differs"
	fi
	printf '    listing ok: %s\n' "$(tr '\n' ' ' <<<"$got")"
}

# get_cmp CLIENT BUCKET KEY EXPECTED_FILE
get_cmp() {
	local f=$WORK/got.$1
	c_get "$1" "$2" "$3" "$f" || fail "$1: get s3://$2/$3 failed"
	cmp "$f" "$4" || fail "$1: s3://$2/$3 differs from $4"
	printf '    bytes ok: %s/%s == %s\n' "$2" "$3" "$(basename "$4")"
}

# expect_lines TITLE EXPECTED_LINES COMMAND...: the command's output, sorted,
# is exactly the expected lines.
expect_lines() {
	local title=$1 want=$2 got
	shift 2
	printf '    $ %s\n' "$*"
	got=$("$@") || fail "$title: command failed: $*"
	got=$(LC_ALL=C sort <<<"$got")
	want=$(LC_ALL=C sort <<<"$want")
	if [[ $got != "$want" ]]; then
		printf 'expected (%s):\n%s\nactual:\n%s\n' "$*" "$want" "$got" >&2
		fail "$title differs"
	fi
	if [[ -z $got ]]; then echo "      (no changes)"; else sed 's/^/      /' <<<"$got"; fi
}

# uploads_started BUCKET KEY: how many multipart uploads of KEY the server's
# access log shows.
uploads_started() {
	grep -cF "operation=CreateMultipartUpload path=/$1/$2 " "$SERVER_LOG" || true
}

# ---------------------------------------------------------------- fixtures
FIX=$WORK/fixtures
mkdir -p "$FIX"
head -c 20971520 /dev/urandom >"$FIX/big.bin"      # 20 MiB: multipart for every client
printf 'hello from the e2e client test\n' >"$FIX/small.txt"
printf 'the fork rewrote this object\n' >"$FIX/small2.txt"
SMALL=$(stat -c %s "$FIX/small.txt")
SMALL2=$(stat -c %s "$FIX/small2.txt")
BIG=$(stat -c %s "$FIX/big.bin")

# scenario CLIENT BUCKET PREFIX EXISTING...: put, list, get, server-side
# copy, multipart put/get and delete under PREFIX/; EXISTING are the
# "KEY SIZE" lines already in the bucket.
scenario() {
	local c=$1 b=$2 p=$3
	shift 3
	local t=$SECONDS
	step "$c: put a small object ($b)"
	c_put "$c" "$FIX/small.txt" "$b" "$p/small.txt" || fail "$c: put small object to $b failed"
	step "$c: list"
	expect_ls "$c" "$b" "$@" "$p/small.txt $SMALL"
	step "$c: get and compare"
	get_cmp "$c" "$b" "$p/small.txt" "$FIX/small.txt"
	step "$c: server-side copy"
	c_cp "$c" "$b" "$p/small.txt" "$p/copy.txt" || fail "$c: server-side copy in $b failed"
	get_cmp "$c" "$b" "$p/copy.txt" "$FIX/small.txt"
	step "$c: 20 MiB multipart upload"
	local n0
	n0=$(uploads_started "$b" "$p/big.bin")
	c_put "$c" "$FIX/big.bin" "$b" "$p/big.bin" || fail "$c: multipart upload to $b failed"
	[[ $(uploads_started "$b" "$p/big.bin") -gt $n0 ]] || fail "$c: the 20 MiB upload to $b/$p/big.bin did not use multipart (no POST ?uploads in the server log)"
	get_cmp "$c" "$b" "$p/big.bin" "$FIX/big.bin"
	step "$c: delete"
	c_rm "$c" "$b" "$p/copy.txt" || fail "$c: delete in $b failed"
	expect_ls "$c" "$b" "$@" "$p/small.txt $SMALL" "$p/big.bin $BIG"
	echo "    scenario on $b took $((SECONDS - t))s"
}

# ---------------------------------------------------------------- per client
TIMINGS=()
for c in "${CLIENTS[@]}"; do
	t=$SECONDS
	repo=e2e-$c
	br=run-$c
	alias=${repo}_$br
	log "$c: main of bucket $repo"
	step "$c: create bucket $repo"
	c_mb "$c" "$repo" || fail "$c: create bucket $repo failed"
	scenario "$c" "$repo" main

	log "$c: fork $br and alias bucket $alias"
	run nas commit "$repo" main -m "e2e: $c on main" || fail "nas commit $repo main failed"
	run nas branch create "$repo" "$br" --from main || fail "nas branch create $repo $br failed"
	step "$c: the fork sees main's committed objects"
	expect_ls "$c" "$alias" "main/small.txt $SMALL" "main/big.bin $BIG"
	get_cmp "$c" "$alias" main/small.txt "$FIX/small.txt"
	if [[ ${KIND[$c]} == rclone ]]; then
		# rclone sends CreateBucket before its first write to a bucket and
		# accepts BucketAlreadyOwnedByYou/BucketAlreadyExists; an alias
		# bucket must answer so for rclone to write to a branch.
		step "$c: write to the alias bucket with rclone's default options (CreateBucket first)"
		if c_put "$c" "$FIX/small.txt" "$alias" fork/probe.txt; then
			c_rm "$c" "$alias" fork/probe.txt || fail "$c: delete on $alias failed"
		else
			bug "rclone cannot write to alias bucket $alias: CreateBucket on an existing branch alias answers 400 InvalidBucketName instead of 409 BucketAlreadyOwnedByYou (continuing with --s3-no-check-bucket)"
			RCLONE_FLAGS=(--s3-no-check-bucket)
		fi
	fi
	scenario "$c" "$alias" fork "main/small.txt $SMALL" "main/big.bin $BIG"
	step "$c: modify and delete main's objects on the fork"
	c_put "$c" "$FIX/small2.txt" "$alias" main/small.txt || fail "$c: overwrite on $alias failed"
	get_cmp "$c" "$alias" main/small.txt "$FIX/small2.txt"
	c_rm "$c" "$alias" main/big.bin || fail "$c: delete on $alias failed"
	expect_ls "$c" "$alias" "main/small.txt $SMALL2" "fork/small.txt $SMALL" "fork/big.bin $BIG"
	step "$c: writes on the fork are invisible on main"
	expect_ls "$c" "$repo" "main/small.txt $SMALL" "main/big.bin $BIG"
	get_cmp "$c" "$repo" main/small.txt "$FIX/small.txt"
	want_changes=$'A fork/big.bin\nA fork/small.txt\nD main/big.bin\nM main/small.txt'
	step "$c: nas changes (staged)"
	expect_lines "nas changes $repo $br" "$want_changes" nas changes "$repo" "$br"
	step "$c: nas diff before the fork's commit (committed states are equal)"
	expect_lines "nas diff $repo main $br (uncommitted)" "" nas diff "$repo" main "$br"
	run nas commit "$repo" "$br" -m "e2e: $c on $br" || fail "nas commit $repo $br failed"
	step "$c: nas diff and nas changes after the commit"
	expect_lines "nas diff $repo main $br" "$want_changes" nas diff "$repo" main "$br"
	expect_lines "nas changes $repo $br (committed)" "$want_changes" nas changes "$repo" "$br"
	want_rev=$'D fork/big.bin\nD fork/small.txt\nA main/big.bin\nM main/small.txt'
	expect_lines "nas diff $repo $br main" "$want_rev" nas diff "$repo" "$br" main
	step "$c: nas log $repo $br"
	logout=$(nas log "$repo" "$br") || fail "nas log $repo $br failed"
	grep -q "e2e: $c on $br" <<<"$logout" || fail "nas log $repo $br lacks the fork's commit"
	grep -q "e2e: $c on main" <<<"$logout" || fail "nas log $repo $br lacks main's commit"
	echo "    log ok: $(grep -c '^commit ' <<<"$logout") commits"
	RCLONE_FLAGS=()
	TIMINGS+=("$c $((SECONDS - t))s")
done

# ---------------------------------------------------------------- compatibility
# Everyday commands with each client's default settings (issue "S3
# compatibility"): copies between buckets and branches, presigned URLs,
# sync both ways, purge, ACLs and info.

# compat_aws CLIENT: s3 cp bucket-to-bucket and branch-to-branch (20 MiB and
# 1 KiB, default settings: aws CLI v2 reads the source's tags), presign then
# curl, sync both ways.
compat_aws() {
	local c=$1 aws=${AWSBIN[$1]} src=cp-$1 dst=cpdst-$1 d=$WORK/sync-$1
	step "$c: s3 cp between buckets and between branches"
	run "$aws" --endpoint-url "$ENDPOINT" s3 mb "s3://$src" >/dev/null || fail "$c: mb $src"
	run "$aws" --endpoint-url "$ENDPOINT" s3 mb "s3://$dst" >/dev/null || fail "$c: mb $dst"
	c_put "$c" "$FIX/big.bin" "$src" big.bin || fail "$c: put big.bin"
	c_put "$c" "$FIX/small.txt" "$src" small.txt || fail "$c: put small.txt"
	for k in big.bin small.txt; do
		run "$aws" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "s3://$src/$k" "s3://$dst/$k" ||
			fail "$c: s3 cp s3://$src/$k s3://$dst/$k failed"
		run "$aws" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "s3://$src/$k" "s3://$src/again-$k" ||
			fail "$c: s3 cp within $src failed"
	done
	get_cmp "$c" "$dst" big.bin "$FIX/big.bin"
	get_cmp "$c" "$dst" small.txt "$FIX/small.txt"
	get_cmp "$c" "$src" again-big.bin "$FIX/big.bin"
	run nas commit "$src" main -m "e2e: $c copies" >/dev/null || fail "nas commit $src"
	run nas branch create "$src" work --from main >/dev/null || fail "nas branch create $src work"
	for k in big.bin small.txt; do
		run "$aws" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "s3://$src/$k" "s3://${src}_work/b2b-$k" ||
			fail "$c: s3 cp main -> branch failed for $k"
	done
	get_cmp "$c" "${src}_work" b2b-big.bin "$FIX/big.bin"
	get_cmp "$c" "${src}_work" b2b-small.txt "$FIX/small.txt"

	step "$c: s3 presign, then curl"
	local url
	url=$(run "$aws" --endpoint-url "$ENDPOINT" s3 presign "s3://$src/small.txt" --expires-in 300) || fail "$c: s3 presign failed"
	printf '    presigned: %s\n' "${url%%\?*}?..."
	curl -sSf -o "$WORK/presigned.$c" "$url" || fail "$c: curl of the presigned URL failed (${url%%Signature=*}...)"
	cmp "$WORK/presigned.$c" "$FIX/small.txt" || fail "$c: presigned GET returned other bytes"

	step "$c: s3 sync up and down"
	rm -rf "$d" "$d.back"
	mkdir -p "$d/sub"
	cp "$FIX/small.txt" "$d/a.txt"
	cp "$FIX/small2.txt" "$d/sub/b.txt"
	run "$aws" --endpoint-url "$ENDPOINT" s3 sync --only-show-errors "$d" "s3://$dst/sync" || fail "$c: sync up failed"
	run "$aws" --endpoint-url "$ENDPOINT" s3 sync --only-show-errors "s3://$dst/sync" "$d.back" || fail "$c: sync down failed"
	diff -r "$d" "$d.back" || fail "$c: sync round trip differs"
	local again
	again=$(run "$aws" --endpoint-url "$ENDPOINT" s3 sync "$d" "s3://$dst/sync") || fail "$c: second sync failed"
	[[ -z $again ]] || fail "$c: a second sync of unchanged files uploaded again: $again"
}

# compat_boto3: boto3's default presigned GET and PUT (SigV2 query
# authentication unless the client is configured for SigV4).
compat_boto3() {
	local py=
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import boto3' 2>/dev/null; then py=$p; break; fi
	done
	[[ -n $py ]] || fail "no python3 with boto3 (install python3-boto3)"
	step "boto3 ($("$py" -c 'import boto3; print(boto3.__version__)')): default presigned PUT and GET"
	ENDPOINT=$ENDPOINT BUCKET=boto3-compat FILE=$FIX/small2.txt run "$py" - <<'PY' || fail "boto3 presigned URLs failed"
import http.client, os, urllib.parse, urllib.request, boto3
c = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"])
b, data = os.environ["BUCKET"], open(os.environ["FILE"], "rb").read()
c.create_bucket(Bucket=b)
put = c.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "boto3.txt"}, ExpiresIn=300)
get = c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "boto3.txt"}, ExpiresIn=300)
print("    kinds:", "SigV2" if "AWSAccessKeyId=" in get else "SigV4")
# urllib would add a Content-Type, which a SigV2 URL signs (as empty).
u = urllib.parse.urlsplit(put)
conn = http.client.HTTPConnection(u.netloc)
conn.request("PUT", u.path + "?" + u.query, body=data)
r = conn.getresponse()
assert r.status == 200, "presigned PUT: %d %s" % (r.status, r.read())
got = urllib.request.urlopen(get).read()
assert got == data, "presigned GET returned other bytes"
print("    presigned PUT then GET ok:", len(got), "bytes")
PY
}

# compat_boto3_branch: docs/clients.md's boto3 recipe: a before-sign hook
# adds a signed x-nas-branch; the write lands on the branch, main keeps its
# own, and the alias bucket reads the same branch.
compat_boto3_branch() {
	local py= b=boto3-branch
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import boto3' 2>/dev/null; then py=$p; break; fi
	done
	[[ -n $py ]] || fail "no python3 with boto3 (install python3-boto3)"
	step "boto3: x-nas-branch through a before-sign hook (docs/clients.md)"
	run nas repo create "$b" --unprotected >/dev/null || fail "nas repo create $b"
	ENDPOINT=$ENDPOINT BUCKET=$b run "$py" -c '
import os, boto3
c = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"])
c.put_object(Bucket=os.environ["BUCKET"], Key="a.txt", Body=b"main")' || fail "boto3 put on main"
	run nas commit "$b" main -m base >/dev/null || fail "nas commit $b main"
	run nas branch create "$b" exp/run-1 --from main >/dev/null || fail "nas branch create $b exp/run-1"
	ENDPOINT=$ENDPOINT BUCKET=$b run "$py" - <<'PY' || fail "boto3 before-sign branch hook failed"
import os, boto3
b = os.environ["BUCKET"]
s3 = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"])
def on_branch(request, **kwargs):
    request.headers["x-nas-branch"] = "exp/run-1"
s3.meta.events.register("before-sign.s3", on_branch)
s3.put_object(Bucket=b, Key="a.txt", Body=b"on the branch")
assert s3.get_object(Bucket=b, Key="a.txt")["Body"].read() == b"on the branch"
plain = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"])
assert plain.get_object(Bucket=b, Key="a.txt")["Body"].read() == b"main", "main changed"
assert plain.get_object(Bucket=b + "_exp_run-1", Key="a.txt")["Body"].read() == b"on the branch", "alias bucket"
print("    branch write, main untouched, alias read ok")
PY
}

# compat_rclone: copy with a 5 MiB upload cutoff, check, then purge, which
# must leave no bucket behind.
compat_rclone() {
	local b=rc-compat d=$WORK/rclone-src
	step "rclone: copy --s3-upload-cutoff 5M, check, purge"
	rm -rf "$d"
	mkdir -p "$d/deep"
	cp "$FIX/big.bin" "$d/big.bin"
	cp "$FIX/small.txt" "$d/deep/small.txt"
	run rclone mkdir "nas:$b" || fail "rclone mkdir"
	run rclone copy --s3-upload-cutoff 5M "$d" "nas:$b/data" || fail "rclone copy failed"
	run rclone check "$d" "nas:$b/data" || fail "rclone check found differences"
	run rclone purge "nas:$b" || fail "rclone purge failed"
	local left
	left=$(run rclone lsd nas:) || fail "rclone lsd failed"
	if grep -qE " $b\$" <<<"$left"; then
		fail "rclone purge left bucket $b behind"
	fi
}

# compat_s3cmd: setacl, info, del --recursive.
compat_s3cmd() {
	local b=s3cmd-compat
	step "s3cmd: setacl, info, del --recursive"
	run s3cmd -c "$S3CFG" mb "s3://$b" >/dev/null || fail "s3cmd mb"
	for k in a/1.txt a/2.txt b.txt; do
		run s3cmd -c "$S3CFG" --no-progress put "$FIX/small.txt" "s3://$b/$k" >/dev/null || fail "s3cmd put $k"
	done
	run s3cmd -c "$S3CFG" setacl --acl-public "s3://$b/b.txt" || fail "s3cmd setacl --acl-public failed"
	local info
	info=$(run s3cmd -c "$S3CFG" info "s3://$b/b.txt") || fail "s3cmd info failed"
	grep -q "ACL:.*\*anon\*: READ" <<<"$info" || fail "s3cmd info does not show the ACL as set: $info"
	run s3cmd -c "$S3CFG" setacl --acl-private "s3://$b/b.txt" || fail "s3cmd setacl --acl-private failed"
	info=$(run s3cmd -c "$S3CFG" info "s3://$b/b.txt") || fail "s3cmd info failed"
	! grep -q "\*anon\*" <<<"$info" || fail "s3cmd setacl --acl-private left the public grant: $info"
	run s3cmd -c "$S3CFG" del --recursive --force "s3://$b/a/" >/dev/null || fail "s3cmd del --recursive failed"
	expect_ls s3cmd "$b" "b.txt $SMALL"
	# Anonymous reads stay refused, whatever the ACL says.
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' "$ENDPOINT/$b/b.txt")
	[[ $code == 403 ]] || fail "an anonymous GET answered $code, want 403"
}

log "compatibility: default settings of every client"
for c in "${CLIENTS[@]}"; do
	case ${KIND[$c]} in
	aws) compat_aws "$c" ;;
	rclone) compat_rclone ;;
	s3cmd) compat_s3cmd ;;
	esac
done
compat_boto3
compat_boto3_branch

# ---------------------------------------------------------------- shutdown
log "online fsck, then SIGTERM"
run nas fsck || fail "online nas fsck failed"
kill -TERM "$SERVER_PID"
stopped=0
for _ in $(seq 100); do
	if ! kill -0 "$SERVER_PID" 2>/dev/null; then stopped=1; break; fi
	sleep 0.1
done
[[ $stopped == 1 ]] || fail "the gateway did not exit within 10s of SIGTERM"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
[[ $rc == 0 ]] || fail "the gateway exited with status $rc after SIGTERM (want 0)"
echo "gateway exited 0 after SIGTERM"

log "offline fsck"
run "$BIN" fsck --data "$DATA" || fail "nas fsck --data $DATA failed"

printf '\nper-client timings:\n'
printf '  %s\n' "${TIMINGS[@]}"
[[ ${#BUGS[@]} -eq 0 ]] || exit 1
log "e2e passed in $((SECONDS - T0))s"
