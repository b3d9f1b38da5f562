#!/usr/bin/env bash
# Size of the nas binary, and where it goes: `go tool nm -size` summed by
# the package path of each symbol (the text before the last '.' of its
# name, closures and methods folded into their package). An estimate:
# the linker's own data and symbols without a package are listed as "";
# bss symbols (zeroed at start, no file space) are left out. Needs
# readelf (binutils).
#
# Usage: bench/binsize.sh [N]    (N: how many packages to list, default 15)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/nas" ./cmd/nas
printf 'nas: %d bytes at %s, %d packages linked\n' "$(stat -c %s "$out/nas")" \
	"$(git rev-parse --short HEAD)" "$(go list -deps ./cmd/nas | wc -l)"
# Symbols at or past the first NOBITS section (.bss, .noptrbss) take no
# file space: zeroed at start.
bss=$(readelf -S -W "$out/nas" | awk '/NOBITS/ && !/\.tbss/ { for (i = 1; i < NF; i++) if ($i == "NOBITS") print $(i + 1) }' | sort | head -n 1)
go tool nm -size "$out/nas" | awk -v bss="$bss" '
{
	if ($3 == "U") next
	addr = substr("0000000000000000", 1, 16 - length($1)) $1
	if (addr >= bss) next
	size = $2; name = $4
	for (i = 5; i <= NF; i++) name = name " " $i
	sub(/\(.*$/, "", name)          # method receivers: pkg.(*T).M -> pkg.
	n = split(name, parts, "/")
	last = parts[n]
	dot = index(last, ".")
	pkg = (dot > 0) ? substr(name, 1, length(name) - length(last) + dot - 1) : ""
	sum[pkg] += size
}
END { for (p in sum) printf "%10d  %s\n", sum[p], p }' | sort -rn | head -n "${1:-15}"
