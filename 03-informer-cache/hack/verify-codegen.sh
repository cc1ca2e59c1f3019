#!/usr/bin/env bash
# verify-codegen.sh: fail when stage 03's generated code is not what the
# generators make from the API types today (someone changed api/ and forgot
# `make generate`, or edited generated code by hand).
#
# It regenerates into a scratch copy of the module and compares, so the
# working tree is never touched.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
STAGE=03-informer-cache

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$ROOT/go.mod" "$ROOT/go.sum" "$tmp/"
mkdir -p "$tmp/$STAGE"
cp -r "$ROOT/$STAGE/api" "$tmp/$STAGE/api"
[[ -d "$ROOT/$STAGE/generated" ]] && cp -r "$ROOT/$STAGE/generated" "$tmp/$STAGE/generated"

"$HERE/update-codegen.sh" "$tmp" >/dev/null 2>"$tmp/codegen.log" || {
	cat "$tmp/codegen.log" >&2
	exit 1
}

if ! diff -ru "$ROOT/$STAGE/api" "$tmp/$STAGE/api" || ! diff -ru "$ROOT/$STAGE/generated" "$tmp/$STAGE/generated"; then
	echo "error: $STAGE's generated code is stale: run 'make generate' and commit the result" >&2
	exit 1
fi
echo "$STAGE: generated code is up to date"
