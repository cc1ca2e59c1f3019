#!/usr/bin/env bash
# exercise.sh N: start lab N's exercise.
#
# Copies stage N-1 into workspace/<stage N's folder name>/, where you turn it
# into stage N. Stage folders are never touched. `make check-N` then runs
# stage N's own e2e tests against the operator built from your copy.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=$((10#${1:?usage: exercise.sh N (2 to 6)}))
((n >= 2 && n <= 6)) || { echo "error: exercises exist for stages 2 to 6 (stage 1 has nothing to start from)" >&2; exit 2; }
prev=$(cd "$ROOT" && ls -d "$(printf %02d $((n - 1)))"-* 2>/dev/null | head -n1 || true)
next=$(cd "$ROOT" && ls -d "$(printf %02d "$n")"-* 2>/dev/null | head -n1 || true)
[[ -n $prev && -n $next ]] || { echo "error: stage $((n - 1)) or $n does not exist" >&2; exit 1; }

dest="$ROOT/workspace/$next"
if [[ -e $dest ]]; then
	echo "error: workspace/$next already exists. Keep working in it, or remove it to start over: rm -rf workspace/$next" >&2
	exit 1
fi
mkdir -p "$ROOT/workspace"
cp -r "$ROOT/$prev" "$dest"
# Your copy is checked by stage N's tests, not by stage N-1's, and
# `go test ./...` should not run a second copy of stage N-1's.
rm -rf "$dest/e2e"
# Imports of the stage's own packages (generated clients, API types) must
# point at your copy, not at the original.
grep -rl --include='*.go' "github.com/operator-flow/operator-flow/$prev/" "$dest" 2>/dev/null |
	xargs -r sed -i "s#github.com/operator-flow/operator-flow/$prev/#github.com/operator-flow/operator-flow/workspace/$next/#g"

echo ">> copied $prev to workspace/$next"
echo ">> your task: labs/$(cd "$ROOT/labs" && ls "$next".md 2>/dev/null || echo "$(printf %02d "$n")-*.md"), section 'Exercise'"
echo ">> build it:  go build ./workspace/$next"
echo ">> check it:  make check-$n   (runs stage $n's e2e tests against your copy)"
