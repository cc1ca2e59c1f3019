#!/usr/bin/env bash
# diff.sh N: what stage N changes in stage N-1, as a diff to read as a lesson.
#
#   make diff-5            the change, tests left out
#   make diff-5 TESTS=1    the tests too
#   make diff-5 COLOR=1    in colour (pipe to less -R)
#
# Before diffing, both stages are copied and tidied, so that only what a
# person changed is left:
#   - Each stage's own name is replaced by a placeholder: 04-workqueue and
#     05-controller-runtime both become STAGE (folder names, import paths,
#     User-Agent); -04 / -05 in names such as operator-flow-05 become -NN,
#     "stage 05" becomes "stage NN", and make targets such as run-5 and
#     deploy-5 become run-N and deploy-N. A change of stage name is not a
#     change of code.
#   - Generated code (deepcopy functions, clientsets, listers, informers,
#     CRDs and the RBAC role controller-gen writes) and go.sum are left out:
#     tools wrote them. READMEs are left out too; read them whole.
#   - Tests are left out unless TESTS=1.
# A file that moved is paired with the file it came from when enough of it
# is the same (git's rename detection; -M15%: 15% similar, low enough to
# pair 04's loggers.go with 05's internal/controller/logger_controller.go),
# so a file that controller-runtime's layout moves shows as a rename and
# its changed lines, not as a deletion and an addition.
#
# It runs on macOS's bash 3.2 and BSD tools as well as on Linux.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=$((10#${1:?usage: diff.sh N (2 to 6)}))
((n >= 2 && n <= 6)) || { echo "error: diff-N takes N from 2 to 6 (stage 1 has no predecessor)" >&2; exit 2; }
old=$(cd "$ROOT" && ls -d "$(printf %02d $((n - 1)))"-* 2>/dev/null | head -n1 || true)
new=$(cd "$ROOT" && ls -d "$(printf %02d "$n")"-* 2>/dev/null | head -n1 || true)
[[ -n $old && -n $new ]] || { echo "error: stage $((n - 1)) or $n does not exist yet" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# copy STAGE DEST: STAGE's hand-written files into DEST, with the stage's
# name normalised.
copy() {
	local stage=$1 dest=$2 num=${1%%-*} f
	cp -R "$ROOT/$stage" "$dest"
	find "$dest" \( -name 'zz_generated*' -o -name go.sum -o -name README.md \) -exec rm -f {} +
	find "$dest" -depth -type d \( -name generated -o -path '*/config/crd' \) -exec rm -rf {} +
	rm -f "$dest/config/rbac/role.yaml" # controller-gen's; the bindings beside it are hand-written
	if [[ -z ${TESTS:-} ]]; then
		find "$dest" -name '*_test.go' -exec rm -f {} +
		find "$dest" -depth -type d \( -name e2e -o -name testdata \) -empty -exec rmdir {} +
	fi
	# sed without -i, which BSD and GNU sed spell differently. LC_ALL=C: a
	# byte that is not UTF-8 is copied, not an error.
	find "$dest" -type f | while IFS= read -r f; do
		LC_ALL=C sed -E -e "s/$stage/STAGE/g" \
			-e "s/-$num([^0-9]|\$)/-NN\1/g" \
			-e "s/([Ss]tage) $num([^0-9]|\$)/\1 NN\2/g" \
			-e "s/(run|lab|deploy|check|exercise|trace|diff)-${num#0}([^0-9]|\$)/\1-N\2/g" \
			"$f" >"$tmp/.sed" && cat "$tmp/.sed" >"$f"
	done
}
copy "$old" "$tmp/a"
copy "$new" "$tmp/b"
rm -f "$tmp/.sed"
cd "$tmp"

git_diff() { git --no-pager diff --no-index -M15% "$@" a b || true; }

# The summary: files, and lines added and removed, in all and in Go.
git_diff --numstat | awk -v old="$old" -v new="$new" -v tests="${TESTS:-}" '
	{ files++; add += $1; del += $2 }
	/\.go$|\.go}$|\.go => / { goadd += $1; godel += $2 }
	END {
		printf "diff-%s: %s -> %s\n", substr(new, 2, 1), old, new
		printf "  %d files changed: +%d -%d lines; Go: +%d -%d\n", files, add, del, goadd, godel
		printf "  stage names normalised to STAGE and NN; generated code and READMEs left out; %s\n",
			tests ? "tests included" : "tests left out (TESTS=1 shows them)"
	}'
echo
git_diff --stat=100
echo
git_diff ${COLOR:+--color=always}
