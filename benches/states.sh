#!/bin/sh
# Every row of issue 27's table, in the states users are in, from one command:
#
#   sh benches/states.sh [--quick]
#
# Each bench builds its own repositories (real `git clone`, `git receipt fetch`,
# refs loose, no commit-graph unless a row says packed) and times each case
# against its baseline in the same run, alternated. This script runs them one
# after another and prints their tables in the order of the README's table
# ("Performance in the states users are in"). About 80 minutes on 2 cores at
# full size, 50 of them the 1,000,000-receipt verify (writing its notes and
# packing is bound by the disk); `--quick` runs every bench at a tenth of its
# size (ratios shift: fixed costs weigh more), in about ten minutes.
#
# Needs what the benches need: stock git, taskset, and for the range-run row
# Michael Haggerty's git-test on PATH (github.com/mhagger/git-test, bin/git-test);
# without it that bench stops with how to install it, and the others still run.
set -u
cd "$(dirname "$0")/.." || exit 2
quick=${1:-}
run() {
	echo
	echo "=== cargo bench --bench $*"
	cargo bench --quiet --bench "$@" 2>&1 | grep -v '^\(   Compiling\|    Finished\|     Running\)' || echo "(bench $1 failed)"
}
if [ "$quick" = "--quick" ]; then
	run fetch -- 1000 3
	run fetch -- 2000 3
	run scale -- 10 3 --only=5
	run verify -- 10000 1 100
	run walk -- 200 3 1
	run prepush -- 3
	run run_range -- --quick
else
	run fetch -- 1000 7
	run fetch -- 10000 5
	run scale -- 1 3 --only=5
	run verify -- 100000 2 100
	run verify -- 1000000 1 10000
	run walk -- 1000 7 3
	run prepush -- 9
	run run_range -- 3
fi
