#!/usr/bin/env bash
# Overhead of `git receipt run noop -- true` over a bare `true`, measured in the
# same run on the same machine. Prints per-call medians and the ratio; asserts
# nothing (figures, not a test).
#
# Usage: bench/run_overhead.sh [ITERATIONS]   (default 200)
set -eu -o pipefail
n=${1:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bin="$here/target/release/git-receipt"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 TZ=UTC LC_ALL=C
unset XDG_CONFIG_HOME GIT_RECEIPT_SIGNING_KEY
mkdir -p "$HOME"
git init -q -b main "$work/repo"
cd "$work/repo"
git config user.email bench@example.org
git config user.name bench
for i in $(seq 50); do echo "file $i" > "f$i.txt"; done
git add -A && git commit -qm bench
"$bin" key generate >/dev/null 2>&1

# time N calls of a command line; print the median in microseconds
median_us() {
  local samples=()
  for _ in $(seq "$n"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    samples+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${samples[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

true_bin=$(command -v true)
base=$(median_us "$true_bin")
gitrev=$(median_us git rev-parse HEAD)
run=$(median_us "$bin" run noop -- "$true_bin")
count=$(git rev-list --count "$(git for-each-ref --format='%(refname)' refs/receipts/ | head -1)")
ms() { awk -v a="$1" 'BEGIN { printf "%8.2f ms", a / 1000 }'; }
echo "iterations per command: $n  (receipts written: $count)"
printf '%-40s %s\n' "bare true (baseline)" "$(ms "$base")"
printf '%-40s %s\n' "git rev-parse HEAD (reference)" "$(ms "$gitrev")"
printf '%-40s %s\n' "git receipt run noop -- true" "$(ms "$run")"
printf '%-40s %s   (target < 25 ms)\n' "overhead over bare true" "$(ms $((run - base)))"
awk -v r="$run" -v g="$gitrev" 'BEGIN { printf "%-40s %8.1fx\n", "ratio run / git rev-parse", r / g }'
