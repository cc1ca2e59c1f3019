#!/usr/bin/env bash
# exercise.sh N: start lab N's exercise (what `make exercise-N` runs).
#
# Writes workspace/<stage N's folder>/: stage N's operator with the functions
# of the stage's concept cut out, each a TODO, and everything else given.
# labs/exercise/main.go lists those functions; the lab names them too.
# Stage folders are never touched. `make check-N` then runs stage N's own e2e
# tests against the operator built from your copy.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
n=${1:?usage: exercise.sh N (2 to 6)}
# Built, not `go run`: go run adds its own "exit status 1" to every refusal.
mkdir -p .state
go build -o .state/exercise ./labs/exercise
exec .state/exercise "$n"
