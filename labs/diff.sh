#!/usr/bin/env bash
# diff.sh N: what stage N changes in stage N-1, as a diff to read as a lesson.
#
#   make diff-5            the change, tests left out
#   make diff-5 TESTS=1    the tests too, after everything else
#   make diff-5 COLOR=1    in colour (pipe to less -R)
#
# Before diffing, both stages are copied and tidied, so that only what a
# person changed is left:
#   - Each stage's own name is replaced by a placeholder: 04-workqueue and
#     05-controller-runtime both become STAGE (folder names, import paths,
#     User-Agent); -04 / -05 in names such as operator-flow-05 become -NN
#     (and a module's -a2 in operator-flow-a2),
#     "stage 05" becomes "stage NN", and make targets such as run-5 and
#     deploy-5 become run-N and deploy-N. A change of stage name is not a
#     change of code.
#   - Generated code (deepcopy functions, clientsets, listers, informers,
#     CRDs and the RBAC role controller-gen writes) and go.sum are left out:
#     tools wrote them. READMEs are left out too; read them whole.
#   - Tests are left out unless TESTS=1.
#   - 01's YAML is left out of diff-2: 02 has no copy of it because it runs
#     on 01's CRDs and samples from 01's folder, so it is not deleted.
# A file that moved is paired with the file it came from when enough of it
# is the same (git's rename detection; -M15%: 15% similar, low enough to
# pair 04's loggers.go with 05's internal/controller/logger_controller.go),
# so a file that controller-runtime's layout moves shows as a rename and
# its changed lines, not as a deletion and an addition.
#
# The files come in the order the stage's README walks them, not in
# alphabetical order: the Go first, then manifests and scripts. The order
# is labs/diff-order/NN.txt, a git order file (git diff -O); its "## "
# lines name the parts, and the summary says which file each part starts
# at. Files it does not list (tests, with TESTS=1) come last. git diff
# --no-index would rank every deleted file under the name /dev/null, so
# both copies are written as trees into a scratch repository and those
# trees are diffed.
#
# A day-two module (make diff-A1) is diffed against its base, the stage or
# module advanced/bases.txt names, in the same way. A module with no
# operator of its own (no main.go) runs its base's unchanged: its diff is
# its own files, each one new.
#
# It runs on macOS's bash 3.2 and BSD tools as well as on Linux, with git 2.x.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
arg=${1:?usage: diff.sh N (2 to 6, or a day-two module such as A1)}
case "$arg" in
[Aa][0-9]*)
	id=A${arg:1}
	new=$(cd "$ROOT" && ls -d advanced/"$id"-* 2>/dev/null | head -n1 || true)
	[[ -n $new ]] || { echo "error: there is no day-two module $id" >&2; exit 1; }
	old=$(awk -v id="$id" '$1 == id { print $2 }' "$ROOT/advanced/bases.txt")
	[[ -n $old ]] || { echo "error: advanced/bases.txt names no base for $id" >&2; exit 1; }
	;;
*)
	n=$((10#$arg))
	((n >= 2 && n <= 6)) || { echo "error: diff-N takes N from 2 to 6 (stage 1 has no predecessor), or a day-two module such as A1" >&2; exit 2; }
	old=$(cd "$ROOT" && ls -d "$(printf %02d $((n - 1)))"-* 2>/dev/null | head -n1 || true)
	new=$(cd "$ROOT" && ls -d "$(printf %02d "$n")"-* 2>/dev/null | head -n1 || true)
	[[ -n $old && -n $new ]] || { echo "error: stage $((n - 1)) or $n does not exist yet" >&2; exit 1; }
	id=$n
	arg=$(printf %02d "$n")
	;;
esac
order=$ROOT/labs/diff-order/$arg.txt
[[ -f $order ]] || { echo "error: $order is missing: it gives the order diff-$id shows its files in" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# copy STAGE DEST: STAGE's hand-written files into DEST, with the stage's
# name normalised.
copy() {
	local stage=$1 dest=$2 num f
	num=$(basename "$stage")
	num=${num%%-*}
	# A module's names in Kubernetes objects are lower case: operator-flow-a2.
	lower=$(echo "$num" | tr 'A-Z' 'a-z')
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
		LC_ALL=C sed -E -e "s|$stage|STAGE|g" \
			-e "s/-$num([^0-9]|\$)/-NN\1/g" \
			-e "s/-$lower([^0-9]|\$)/-NN\1/g" \
			-e "s/([Ss]tage) $num([^0-9]|\$)/\1 NN\2/g" \
			-e "s/(run|lab|deploy|check|exercise|trace|diff)-${num#0}([^0-9]|\$)/\1-N\2/g" \
			"$f" >"$tmp/.sed" && cat "$tmp/.sed" >"$f"
	done
}
if [[ $new == advanced/* && ! -f "$ROOT/$new/main.go" ]]; then
	mkdir "$tmp/a"
	left_out="  $new runs the operator of $old unchanged: every file it shows is its own, and new"
else
	copy "$old" "$tmp/a"
	left_out=""
fi
copy "$new" "$tmp/b"
rm -f "$tmp/.sed"

# 02 has no copy of 01's YAML: it uses 01's CRDs and samples where they
# are. Shown as deleted, they would read as a change they are not.
if [[ $id == 2 ]]; then
	rm -rf "$tmp/a/crds" "$tmp/a/invalid" "$tmp/a/samples"
	left_out="  $old's YAML left out (crds/, invalid/, samples/): it stays there, and $new runs on those CRDs and samples"
fi

# Both copies as trees of a scratch repository: -f, because a user's global
# ignore rules must not hide a stage's file.
cd "$tmp"
git init -q .
git add -A -f a b
# tree DIR: the tree of DIR's files; git's empty tree when it has none (01
# once its YAML is left out).
tree() {
	if [[ -n $(find "$1" -type f) ]]; then git write-tree --prefix="$1/"; else git hash-object -w -t tree /dev/null; fi
}
ta=$(tree a)
tb=$(tree b)
git_diff() { git --no-pager diff -M15% -O"$order" "$@" "$ta" "$tb"; }

# The summary: files, and lines added and removed, in all and in Go; then
# the parts of the order file and the file each starts at.
git_diff --numstat | awk -v id="$id" -v old="$old" -v new="$new" -v tests="${TESTS:-}" '
	{ files++; add += $1; del += $2 }
	/\.go$|\.go}$|\.go => / { goadd += $1; godel += $2 }
	END {
		printf "diff-%s: %s -> %s\n", id, old, new
		printf "  %d files changed: +%d -%d lines; Go: +%d -%d\n", files, add, del, goadd, godel
		printf "  stage names normalised to STAGE and NN; generated code and READMEs left out; %s\n",
			tests ? "tests included, last" : "tests left out (TESTS=1 shows them)"
	}'
[[ -z $left_out ]] || echo "$left_out"
# Print each "## " part of the order file with the first of its files that
# the diff shows. awk reads the diff's file names first (NR == FNR).
git_diff --name-only | awk '
	NR == FNR { shown[$0] = 1; next }
	/^## / { part = substr($0, 4); next }
	/^#/ || NF == 0 { next }
	part != "" && ($0 in shown) {
		if (!head++) print "  the files in the order the README walks them:"
		printf "    from %s: %s\n", $0, part
		part = ""
	}' - "$order"
echo
git_diff --stat=100
echo
git_diff ${COLOR:+--color=always}
