#!/usr/bin/env bash
# End-to-end test of the specification's journey of a run with real
# clients: the owner defines role `cleo`; each aws CLI on PATH assumes it
# through STS on the S3 endpoint, reads its paths and writes its branch with
# the temporary credentials only; every out-of-lease attempt fails with the
# right error; the owner explains the run's commit back to its run, lease and
# read manifest; `nas verify` passes; a revoked lease dies on its next
# request. rclone then uses a lease made by `nas lease create`.
#
# Usage: .ci/e2e-leases.sh   (E2E_KEEP=1 keeps the temp dir)
set -euo pipefail

export PATH="/usr/local/go/bin:$PATH"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T0=$SECONDS
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nas-leases.XXXXXX")
BIN=$WORK/nas
LOG=$WORK/server.log
PID=

log() { printf '\n=== %s\n' "$*"; }
fail() {
	printf '\nFAIL: %s\n' "$*" >&2
	exit 1
}
cleanup() {
	local rc=$?
	set +e
	[[ -z ${MNT:-} ]] || umount -l "$MNT" 2>/dev/null
	[[ -z $PID ]] || { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
	if [[ $rc -ne 0 ]]; then
		printf '\n=== lease e2e FAILED (exit %d); last 40 lines of the server log:\n' "$rc" >&2
		tail -n 40 "$LOG" >&2 2>/dev/null
	fi
	[[ ${E2E_KEEP:-} == 1 ]] && echo "kept $WORK" >&2 || rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT

unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_CA_BUNDLE NAS_ENDPOINT NAS_SESSION_TOKEN
OWNER_AK=LEASEE2EOWNER0000001
OWNER_SK=lease-e2e-owner-secret-0001
export AWS_DEFAULT_REGION=us-east-1 AWS_PAGER= AWS_EC2_METADATA_DISABLED=true
export AWS_CONFIG_FILE=$WORK/aws-config AWS_SHARED_CREDENTIALS_FILE=$WORK/aws-credentials
: >"$AWS_CONFIG_FILE"
: >"$AWS_SHARED_CREDENTIALS_FILE"

log "build and start"
(cd "$ROOT" && go build -o "$BIN" ./cmd/nas)
NAS_ACCESS_KEY=$OWNER_AK NAS_SECRET_KEY=$OWNER_SK "$BIN" serve --addr 127.0.0.1:0 --data "$WORK/data" >"$LOG" 2>&1 &
PID=$!
EP=
for _ in $(seq 300); do
	EP=$(sed -n 's#^nas: serving S3 and the control API on \(http://[^ ]*\) .*#\1#p' "$LOG" | head -n1)
	[[ -z $EP ]] || break
	sleep 0.1
done
[[ -n $EP ]] || fail "the gateway did not start"
echo "gateway at $EP"

# cmd_ COMMAND...: "nas" means the built binary on this gateway.
cmd_() {
	if [[ $1 == nas ]]; then
		shift
		set -- "$BIN" --endpoint "$EP" "$@"
	fi
	"$@"
}
# owner COMMAND...: run with the owner's credentials.
owner() { NAS_ACCESS_KEY=$OWNER_AK NAS_SECRET_KEY=$OWNER_SK AWS_ACCESS_KEY_ID=$OWNER_AK AWS_SECRET_ACCESS_KEY=$OWNER_SK cmd_ "$@"; }

# expect_error CODE COMMAND...: the command must fail and mention CODE.
expect_error() {
	local code=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "expected $code, but this succeeded: $* -> $out"
	fi
	grep -q -- "$code" <<<"$out" || fail "expected $code from: $* -> $out"
	echo "    refused as expected ($code): ${*: -1}"
}

AWSES=()
declare -A seen=()
while IFS= read -r a; do
	r=$a
	[[ $a != */.pyenv/shims/* ]] || r=$(pyenv which aws 2>/dev/null || echo "$a")
	r=$(readlink -f "$r")
	[[ -z ${seen[$r]:-} ]] || continue
	seen[$r]=1
	AWSES+=("$a")
done < <(type -a -P aws || true)
[[ ${#AWSES[@]} -gt 0 ]] || fail "no aws CLI on PATH"

i=0
for AWS in "${AWSES[@]}"; do
	i=$((i + 1))
	REPO=journey$i
	ver=$("$AWS" --version 2>&1 | head -n1)
	log "journey with $AWS ($ver) in repository $REPO"
	echo "launch notes v1" >"$WORK/notes.md"
	echo "salaries" >"$WORK/salaries.txt"
	owner nas repo create "$REPO" --unprotected >/dev/null
	owner "$AWS" --endpoint-url "$EP" s3 cp "$WORK/notes.md" "s3://$REPO/shared/launch/notes.md" --only-show-errors
	owner "$AWS" --endpoint-url "$EP" s3 cp "$WORK/salaries.txt" "s3://$REPO/finance/salaries.txt" --only-show-errors
	owner "$AWS" --endpoint-url "$EP" s3 cp "$WORK/salaries.txt" "s3://$REPO/shared/launchpad/x" --only-show-errors
	owner nas commit "$REPO" main -m "seed" >/dev/null
	owner nas branch protect "$REPO" main >/dev/null
	owner nas role put "cleo$i" --repo "$REPO" --paths 'shared/launch/**' --actions list,read,write,propose --fork-from main --max-ttl 8h >/dev/null

	echo "--- the run assumes role cleo$i through STS"
	owner "$AWS" --endpoint-url "$EP" sts assume-role --role-arn "arn:aws:iam::000000000000:role/cleo$i" \
		--role-session-name run-91ab --duration-seconds 3600 --output json >"$WORK/creds.json"
	read -r LAK LSK LTOK < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["Credentials"]; print(c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])' "$WORK/creds.json")
	[[ $LAK == ASIA* ]] || fail "AssumeRole returned no temporary access key"
	run_() { NAS_ACCESS_KEY= NAS_SECRET_KEY= AWS_ACCESS_KEY_ID=$LAK AWS_SECRET_ACCESS_KEY=$LSK AWS_SESSION_TOKEN=$LTOK cmd_ "$@"; }
	lease_aws() { run_ "$AWS" --endpoint-url "$EP" "$@"; }

	who=$(lease_aws sts get-caller-identity --query Arn --output text)
	[[ $who == "arn:aws:sts::000000000000:assumed-role/cleo$i/run-91ab" ]] || fail "GetCallerIdentity: $who"
	echo "    caller: $who"

	echo "--- the run reads its paths and writes its branch"
	listing=$(lease_aws s3 ls "s3://$REPO/" --recursive)
	grep -q 'shared/launch/notes.md' <<<"$listing" || fail "the run cannot see its own path: $listing"
	if grep -qE 'finance|launchpad' <<<"$listing"; then fail "the listing leaks hidden keys: $listing"; fi
	lease_aws s3 cp "s3://$REPO/shared/launch/notes.md" "$WORK/got.md" --only-show-errors
	cmp "$WORK/notes.md" "$WORK/got.md" || fail "read back differs"
	echo "draft by cleo" >"$WORK/draft.md"
	lease_aws s3 cp "$WORK/draft.md" "s3://$REPO/shared/launch/draft.md" --only-show-errors
	top=$(lease_aws s3 ls "s3://$REPO/")
	if grep -q finance <<<"$top"; then fail "the root listing shows a hidden prefix: $top"; fi

	echo "--- every out-of-lease attempt fails"
	expect_error '404' lease_aws s3api head-object --bucket "$REPO" --key finance/salaries.txt
	expect_error 'NoSuchKey' lease_aws s3api get-object --bucket "$REPO" --key finance/salaries.txt "$WORK/x"
	expect_error 'NoSuchKey' lease_aws s3api get-object --bucket "$REPO" --key shared/launchpad/x "$WORK/x"
	expect_error 'NoSuchKey' lease_aws s3api get-object --bucket "$REPO" --key 'shared/launch/../../finance/salaries.txt' "$WORK/x"
	expect_error 'NoSuchBucket' lease_aws s3 ls "s3://${REPO}_main/"
	expect_error 'NoSuchKey' lease_aws s3api copy-object --bucket "$REPO" --key shared/launch/stolen --copy-source "$REPO/finance/salaries.txt"
	expect_error 'NoSuchBucket' lease_aws s3api copy-object --bucket "$REPO" --key shared/launch/stolen --copy-source "${REPO}_main/finance/salaries.txt"
	expect_error 'AccessDenied' lease_aws s3 rm "s3://$REPO/shared/launch/notes.md"
	expect_error 'AccessDenied' lease_aws s3api put-bucket-versioning --bucket "$REPO" --versioning-configuration Status=Enabled
	if lease_aws s3api list-buckets --query 'Buckets[].Name' --output text | grep -qv "^$REPO$"; then
		fail "ListBuckets shows other repositories to the run"
	fi
	owner "$AWS" --endpoint-url "$EP" s3api head-object --bucket "$REPO" --key finance/salaries.txt >/dev/null ||
		fail "a refused request damaged the owner's data"

	echo "--- refreshing credentials continues the run on the same branch"
	owner "$AWS" --endpoint-url "$EP" sts assume-role --role-arn "arn:aws:iam::000000000000:role/cleo$i" \
		--role-session-name run-91ab --output json >"$WORK/creds2.json"
	if [[ $(owner nas branch list "$REPO" | grep -c "cleo$i/") != 1 ]]; then fail "assuming again forked a second branch"; fi

	echo "--- the run commits; the owner explains the commit"
	commit=$(run_ nas commit "$REPO" "cleo$i/run-91ab" -m "draft release notes" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["commit"]["id"])')
	owner nas explain "$REPO" "$commit" >"$WORK/explain.json"
	python3 - "$WORK/explain.json" "$LAK" <<'EOF' || fail "explain does not lead back to the run, lease and read manifest"
import json, sys
ex = json.load(open(sys.argv[1]))["explanation"]
assert ex["run"] == "run-91ab", ex["run"]
assert ex["lease"].startswith("lse_"), ex["lease"]
reads = ex["read_manifest"]["reads"]
assert any(r["path"] == "shared/launch/notes.md" for r in reads), reads
assert any(e["kind"] == "denied" for e in ex["run_events"]), "denials missing from the run's events"
print("    commit %s: run %s, lease %s, %d read(s) in the manifest" % (ex["commit"][:12], ex["run"], ex["lease"], len(reads)))
EOF
	owner nas verify
	lid=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["explanation"]["lease"])' <"$WORK/explain.json")

	echo "--- the one door, through the aws CLI"
	# A single-use grant survives the HEAD that aws s3 cp sends first.
	owner nas share grant "$lid" finance/salaries.txt --ttl 10m --single-use >/dev/null
	lease_aws s3 cp "s3://$REPO/finance/salaries.txt" "$WORK/granted.txt" --only-show-errors ||
		fail "aws s3 cp of a single-use granted key failed (the HEAD used up the grant?)"
	cmp "$WORK/salaries.txt" "$WORK/granted.txt" || fail "the granted read differs"
	expect_error '404' lease_aws s3 cp "s3://$REPO/finance/salaries.txt" "$WORK/granted2.txt"
	[[ $(owner nas share list "$lid" --json | python3 -c 'import json,sys; print(sum(g["live"] for g in json.load(sys.stdin)["grants"]))') == 0 ]] ||
		fail "the used single-use grant is still live"
	# Five hundred refusals in one request are one summary record.
	before=$(owner nas audit --lease "$lid" --kind denied | wc -l)
	python3 -c 'import json; print(json.dumps({"Objects": [{"Key": "finance/k%03d" % i} for i in range(500)], "Quiet": True}))' >"$WORK/del.json"
	lease_aws s3api delete-objects --bucket "$REPO" --delete "file://$WORK/del.json" >/dev/null
	after=$(owner nas audit --lease "$lid" --kind denied | wc -l)
	(( after - before <= 2 )) || fail "500 hidden deletes wrote $((after - before)) denial records"
	echo "    500 hidden deletes: $((after - before)) denial record(s)"
	# A presigned URL cannot be pointed at another branch by an unsigned header.
	if "$AWS" --version 2>&1 | grep -q '^aws-cli/2'; then
		url=$(lease_aws s3 presign "s3://$REPO/shared/launch/notes.md" --expires-in 300)
		python3 "$ROOT/.ci/unsigned-header.py" "$url" || fail "an unsigned x-nas-branch header on a presigned URL was not refused"
		echo "    a presigned URL with an added unsigned header: 403"
	fi
	# Proposing into a branch the run may not name answers like a missing one.
	owner nas branch create "$REPO" release --from main >/dev/null
	hidden=$(run_ nas propose "$REPO" "cleo$i/run-91ab" --into release 2>&1 || true)
	missing=$(run_ nas propose "$REPO" "cleo$i/run-91ab" --into nope 2>&1 || true)
	[[ ${hidden//release/X} == "${missing//nope/X}" ]] || fail "a hidden and a missing target answer differently: $hidden / $missing"
	echo "    propose into a hidden branch answers as a missing one: $hidden"

	echo "--- revocation is effective on the next request"
	owner nas lease revoke "$lid" >/dev/null
	expect_error 'InvalidAccessKeyId' lease_aws s3 ls "s3://$REPO/shared/launch/"
done

log "rclone with a lease from nas lease create"
# The owner's leases are held to their role, as AssumeRole's are.
owner nas role put rclonerun --repo journey1 --paths 'shared/launch/**' --actions list,read --fork-from main --max-ttl 1h >/dev/null
owner nas lease create journey1 --role rclonerun --paths 'shared/launch/**' --actions list,read --ttl 30m --json >"$WORK/lease.json"
read -r RAK RSK RTOK < <(python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); print(l["access_key_id"], l["secret_access_key"], l["session_token"])' "$WORK/lease.json")
export RCLONE_CONFIG=$WORK/rclone.conf
: >"$RCLONE_CONFIG"
rc() {
	env RCLONE_CONFIG_L_TYPE=s3 RCLONE_CONFIG_L_PROVIDER=Other RCLONE_CONFIG_L_ENDPOINT="$EP" RCLONE_CONFIG_L_REGION=us-east-1 \
		RCLONE_CONFIG_L_ACCESS_KEY_ID="$RAK" RCLONE_CONFIG_L_SECRET_ACCESS_KEY="$RSK" RCLONE_CONFIG_L_SESSION_TOKEN="$RTOK" \
		RCLONE_CONFIG_L_FORCE_PATH_STYLE=true rclone "$@"
}
out=$(rc ls l:journey1)
grep -q 'shared/launch/notes.md' <<<"$out" || fail "rclone with lease credentials cannot list its path: $out"
if grep -q finance <<<"$out"; then fail "rclone listing leaks hidden keys: $out"; fi
rc cat l:journey1/shared/launch/notes.md >/dev/null
# rclone cat of a missing path prints nothing and succeeds; the hidden
# bytes must not appear, and copying the key must fail.
if rc cat l:journey1/finance/salaries.txt 2>/dev/null | grep -q salaries; then fail "rclone read a hidden key"; fi
rc copyto l:journey1/finance/salaries.txt "$WORK/stolen" 2>/dev/null || true
[[ ! -e $WORK/stolen ]] || fail "rclone copied a hidden key"
echo "    rclone sees only the lease's paths"

log "a sandbox mounts its lease's branch (nas mount --lease-json)"
if [[ -e /dev/fuse && $(id -u) == 0 ]]; then
	# git renames and removes lock files: the sandbox needs delete too.
	owner nas role put sandbox --repo journey1 --paths 'shared/launch/**' --actions list,read,write,delete --fork-from main --max-ttl 1h >/dev/null
	owner nas lease create journey1 --role sandbox --paths 'shared/launch/**' --actions list,read,write,delete --fork-from main --ttl 30m --json >"$WORK/mount-lease.json"
	MNT=$WORK/mnt
	mkdir -p "$MNT"
	env -u NAS_ACCESS_KEY -u NAS_SECRET_KEY -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
		"$BIN" --lease-json "$WORK/mount-lease.json" mount "$MNT" --cache-dir "$WORK/cache" >"$WORK/mount.log" 2>&1 &
	MPID=$!
	for _ in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
	grep -q " $MNT fuse" /proc/mounts || { cat "$WORK/mount.log"; fail "the mount did not come up"; }
	[[ $(ls -A "$MNT") == shared ]] || fail "the lease's mount shows $(ls -A "$MNT")"
	[[ $(cat "$MNT/shared/launch/notes.md") == "launch notes v1" ]] || fail "reading through the mount"
	if cat "$MNT/finance/salaries.txt" 2>/dev/null; then fail "the mount read a hidden key"; fi
	[[ ! -e $MNT/finance ]] || fail "a hidden directory exists in the mount"
	echo "draft from the sandbox" >"$MNT/shared/launch/draft.md"
	(cd "$MNT/shared/launch" && git init -q . && git add -A && git -c user.email=s@x -c user.name=s commit -qm draft) ||
		fail "git inside the mount"
	if (echo x >"$MNT/shared/escape.txt") 2>/dev/null; then fail "the mount wrote outside the lease"; fi
	grep -q 'A shared/launch/draft.md' <(cmd_ nas changes "$MNT") || fail "nas changes DIR does not show the draft"
	grep -q '"lease_id"' "$MNT/.nas/lease.json" || fail ".nas/lease.json"
	cmd_ nas unmount "$MNT" || fail "nas unmount"
	wait "$MPID" || { cat "$WORK/mount.log"; fail "nas mount did not exit cleanly"; }
	branch=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["branch"])' "$WORK/mount-lease.json")
	# The header-less alias: "/" is written "_", a literal "_" "__".
	alias="journey1_$(python3 -c 'import sys; print(sys.argv[1].replace("_", "__").replace("/", "_"))' "$branch")"
	got=$(owner "${AWSES[0]}" --endpoint-url "$EP" s3 cp "s3://$alias/shared/launch/draft.md" - 2>&1) || true
	[[ $got == "draft from the sandbox" ]] || fail "the owner does not see the sandbox's file on its branch: $got"
	echo "    the sandbox's work is on its branch, and nothing outside the lease was reachable"
else
	echo "    skipped: needs root and /dev/fuse"
fi

log "lease e2e passed in $((SECONDS - T0))s"
