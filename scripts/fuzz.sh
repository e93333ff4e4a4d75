#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 10s), one
# after the other: the decoders of the wire protocol (frames, requests,
# connect, multi, setWatches, SASL), the raft entries, transactions and
# snapshots, and the zoo.cfg, client properties and JAAS parsers.
#
#   bash scripts/fuzz.sh               # the short pass CI runs
#   FUZZTIME=10m FUZZMINIMIZETIME=60s bash scripts/fuzz.sh  # a long campaign
#
# FUZZMINIMIZETIME defaults to 0 (no minimizing): while the fuzzer minimizes
# a new interesting input every worker stops, and on targets with slow
# executions (FuzzReadSnapshot) a minimization that outlives a short
# -fuzztime made the pass fail with "context deadline exceeded".
#
# A failing input is written under the package's testdata/fuzz/ (commit it
# with the fix: it becomes a regression test that go test always runs).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-10s}"
minimize="${FUZZMINIMIZETIME:-0}"
failed=0
while read -r file target; do
	pkg="./$(dirname "$file")"
	echo "fuzz: $pkg $target ($fuzztime)"
	if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg"; then
		failed=1
	fi
done < <(grep -rE --include='*_test.go' -o '^func (Fuzz[A-Za-z0-9_]+)' . | sed -E 's#^\./##; s#:func # #' | sort)
exit "$failed"
