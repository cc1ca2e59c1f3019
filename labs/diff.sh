#!/usr/bin/env bash
# diff.sh N: what stage N changes in stage N-1, as a diff.
#
# Generated code (deepcopy functions, clientsets, listers, informers, CRDs
# and RBAC written by controller-gen) and go.sum are left out: they are
# written by tools, and the lesson is in what a person wrote. READMEs are left
# out too; read them whole.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=$((10#${1:?usage: diff.sh N (2 to 6)}))
((n >= 2 && n <= 6)) || { echo "error: diff-N takes N from 2 to 6 (stage 1 has no predecessor)" >&2; exit 2; }
old=$(cd "$ROOT" && ls -d "$(printf %02d $((n - 1)))"-* 2>/dev/null | head -n1 || true)
new=$(cd "$ROOT" && ls -d "$(printf %02d "$n")"-* 2>/dev/null | head -n1 || true)
[[ -n $old && -n $new ]] || { echo "error: stage $((n - 1)) or $n does not exist yet" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in "$old" "$new"; do
	cp -r "$ROOT/$d" "$tmp/$d"
	find "$tmp/$d" \( -name 'zz_generated*' -o -name go.sum -o -name README.md \) -delete
	find "$tmp/$d" -depth -type d \( -name generated -o -path '*/config/crd' \) -exec rm -rf {} +
	rm -f "$tmp/$d/config/rbac/role.yaml" # controller-gen's; the bindings beside it are hand-written
done
cd "$tmp"
# The stages are different folders; compare them as if they were one.
mv "$old" a && mv "$new" b
git --no-pager diff --no-index --stat a b || true
echo
git --no-pager diff --no-index ${COLOR:+--color=always} a b || true
