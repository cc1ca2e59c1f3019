# operator-flow: the same Kubernetes operator built six times.
# `make help` lists every target. Tool versions live in tools/versions.mk.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

include tools/versions.mk

ROOT   := $(CURDIR)
BIN    := $(ROOT)/bin
STATE  := $(ROOT)/.state
PINS   := $(BIN)/.pins
KUBECONFIG_FILE := $(STATE)/kubeconfig
KUBECTL := $(BIN)/kubectl --kubeconfig $(KUBECONFIG_FILE)
export CLUSTER ?= kwok

# What a cluster target needs built first. The kwok cluster runs the control
# plane from ./bin (`make tools`, about 13 minutes once). A kind cluster needs
# only kind and kubectl, and a Docker engine: docker-check fails within
# seconds when none answers, before anything is built.
KIND_TOOLS    := docker-check $(BIN)/kind $(BIN)/kubectl
CLUSTER_TOOLS := $(if $(filter kind,$(CLUSTER)),$(KIND_TOOLS),tools)

# $(call kwok_only,LOGGERS,TARGET): stop TARGET on kind when LOGGERS Logger
# pods would not fit. A kind cluster is one node, and the kubelet admits at
# most 110 pods (maxPods), about 10 of them kube-system's.
kwok_only = $(if $(filter kind,$(CLUSTER)),$(if $(shell test $(1) -gt 90 && echo over),\
	$(error make $(2) runs $(1) Logger pods, and a kind cluster's one node takes at most 110 pods. Run it on the default kwok cluster: make $(2) CLUSTER=kwok)))

# The stage folders, in course order. `make run-3`, `make e2e STAGE=03` and
# friends find a stage by its number.
STAGES := 01-crd-yaml 02-raw-watch 03-informer-cache 04-workqueue 05-controller-runtime 06-status-and-owners
stage_dir = $(if $(filter A% a%,$(1)),$(wildcard advanced/A$(patsubst a%,%,$(patsubst A%,%,$(1)))-*),$(filter $(shell printf %02d $(1))-%,$(STAGES)))

# A stage may bring targets of its own (code generation, manifests, deploy) in
# <stage>/stage.mk. It adds them to these lists, which `make generate`,
# `make manifests` and `make verify` run.
GENERATE_TARGETS :=
MANIFEST_TARGETS :=
VERIFY_TARGETS   :=
-include $(wildcard $(addsuffix /stage.mk,$(STAGES)))
-include $(wildcard advanced/*/stage.mk)

# ------------------------------------------------------------------ help ---

.PHONY: help
help: ## Show every target, one line each.
	@echo "usage: make <target>   (N is a stage number, 1 to 6, or a day-two module: A1, A2, A3)"
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_%-]+:.*## / {t = $$1; sub(/%/, "N", t); d = $$2; gsub(/\$$\$$/, "$$", d); printf "  %-16s %s\n", t, d}' $(MAKEFILE_LIST)

# ----------------------------------------------------------------- tools ---
# Each tool is rebuilt only when its binary is missing or its pin in
# tools/versions.mk changed. A pin is remembered in bin/.pins/<tool>, which is
# rewritten only when the version differs, so its timestamp moves only then.

KUBE_BINS := $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler
KWOK_BINS := $(BIN)/kwokctl $(BIN)/kwok
TOOLS     := $(KUBE_BINS) $(BIN)/kubectl $(BIN)/etcd $(KWOK_BINS) $(BIN)/kind

.PHONY: tools
tools: $(TOOLS) ## Build the pinned cluster binaries into ./bin (only what is missing or outdated).

.PHONY: FORCE
FORCE:
$(PINS)/%: FORCE
	@mkdir -p $(@D)
	@echo '$($*)' | cmp -s - $@ || echo '$($*)' >$@

# Stamp the version that `kubectl version` and the API server's /version report.
KUBE_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitTreeState=clean \
	-X $(p).gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))) \
	-X $(p).gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))))

# The kube binaries and etcd are static (CGO_ENABLED=0), as upstream ships
# them. The kind node image (tools/kind/node-image.sh) copies these and builds
# its kubelet, kubeadm and kube-proxy from the same module with the same
# settings, so the packages they share are compiled once (Go's build cache).
STATIC_GO := CGO_ENABLED=0 go build -trimpath

# kubectl has a rule of its own: CLUSTER=kind needs it without the control
# plane.
$(BIN)/kubectl: $(PINS)/KUBE_VERSION tools/kube/go.mod tools/kube/go.sum
	@echo ">> building kubectl $(KUBE_VERSION) from source into ./bin (once)"
	@cd tools/kube && $(STATIC_GO) -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kubectl
	@touch $@

$(KUBE_BINS) &: $(PINS)/KUBE_VERSION tools/kube/go.mod tools/kube/go.sum
	@echo ">> building kube-apiserver, kube-controller-manager, kube-scheduler $(KUBE_VERSION) from source into ./bin: about 10 minutes on 2 cores the first time, seconds when Go's build cache has them"
	@start=$$SECONDS; cd tools/kube && $(STATIC_GO) -ldflags '$(KUBE_LDFLAGS)' -o $(BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler; \
		echo ">> control plane built in $$((SECONDS - start))s"
	@touch $(KUBE_BINS)

$(BIN)/etcd: $(PINS)/ETCD_VERSION tools/etcd/go.mod tools/etcd/go.sum tools/etcd/main.go
	@echo ">> building etcd $(ETCD_VERSION) into ./bin (once, about a minute)"
	@cd tools/etcd && $(STATIC_GO) -ldflags '-s -w' -o $@ .

$(KWOK_BINS) &: $(PINS)/KWOK_VERSION
	@echo ">> building kwok and kwokctl $(KWOK_VERSION) into ./bin (once, about a minute)"
	@GOBIN=$(BIN) go install -trimpath -ldflags '-s -w' sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION) sigs.k8s.io/kwok/cmd/kwokctl@$(KWOK_VERSION)
	@touch $(KWOK_BINS)

$(BIN)/controller-gen: $(PINS)/CONTROLLER_GEN_VERSION
	@echo ">> building controller-gen $(CONTROLLER_GEN_VERSION) into ./bin (once)"
	@GOBIN=$(BIN) go install -trimpath sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	@touch $@

$(BIN)/kind: $(PINS)/KIND_VERSION
	@echo ">> building kind $(KIND_VERSION) into ./bin (once; only CLUSTER=kind uses it)"
	@GOBIN=$(BIN) go install -trimpath -ldflags '-s -w' sigs.k8s.io/kind@$(KIND_VERSION)
	@touch $@

# golangci-lint with kube-api-linter built in, for `make lint`. kube-api-linter
# ships its command (cmd/golangci-lint-kube-api-linter) as golangci-lint's main
# plus its module plugin, but its go.mod asks for an older golangci-lint. A
# throwaway module that requires both pins builds that command against
# GOLANGCI_LINT_VERSION: what `golangci-lint custom` does, without the git
# clone (the Go module proxy is all it needs).
$(BIN)/golangci-lint: $(PINS)/GOLANGCI_LINT_VERSION $(PINS)/KUBE_API_LINTER_VERSION
	@echo ">> building golangci-lint $(GOLANGCI_LINT_VERSION) with kube-api-linter into ./bin (once, about 5 minutes on 2 cores)"
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; cd "$$tmp"; \
		out=$$(go mod init golangci-lint-kube-api-linter 2>&1 && \
			go get github.com/golangci/golangci-lint/v2@$(GOLANGCI_LINT_VERSION) \
				sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter@$(KUBE_API_LINTER_VERSION) 2>&1) || \
			{ echo "$$out" >&2; exit 1; }; \
		go build -trimpath -ldflags '-s -w' -o $@ sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter

.PHONY: generate
generate: $(GENERATE_TARGETS) ## Regenerate Go code (deepcopy, clientsets, listers, informers).

.PHONY: manifests
manifests: $(MANIFEST_TARGETS) ## Regenerate CRDs and RBAC from kubebuilder markers (controller-gen).

.PHONY: verify
verify: $(VERIFY_TARGETS) ## Fail when generated code or manifests are stale.

# --------------------------------------------------------------- cluster ---

.PHONY: docker-check
docker-check:
	@cluster/cluster.sh docker-check

.PHONY: cluster
cluster: $(CLUSTER_TOOLS) ## Start the workshop cluster, or reuse the running one (CLUSTER=kind for kind).
	@cluster/cluster.sh up

.PHONY: kind-image
kind-image: docker-check ## Build the kind node image for KUBE_VERSION from source, for machines that cannot pull kindest/node (Linux; cached).
	@tools/kind/node-image.sh

.PHONY: test-kind
test-kind: $(KIND_TOOLS) ## The kind suite: e2e, labs, check-6 and deploy-5/6 on one kind cluster, where pods really run (tools/kind/suite.sh).
	@tools/kind/suite.sh

.PHONY: cluster-down
cluster-down: ## Stop the workshop cluster; no process or port is left behind.
	@cluster/cluster.sh down

.PHONY: env
env: ## Print exports for plain kubectl: eval $$(make env)
	@cluster/cluster.sh env

# ---------------------------------------------------------------- stages ---

.PHONY: run-%
run-%: cluster ## install stage N's CRDs and run its operator in the foreground.
	@labs/lab.sh run $*

.PHONY: lab-%
lab-%: cluster ## cluster, CRDs, stage N's operator in the background, samples, then the result.
	@labs/lab.sh lab $*

.PHONY: diff-%
diff-%: ## what stage N changes in stage N-1: stage names normalised, generated code and tests left out (TESTS=1 shows tests).
	@labs/diff.sh $*

.PHONY: exercise-%
exercise-%: ## write workspace/<stage N>: stage N with its concept's functions cut out, for you to write.
	@labs/exercise.sh $*

.PHONY: check-%
check-%: $(CLUSTER_TOOLS) ## stop the lab operator, run stage N's e2e tests against your workspace/ copy, say what works.
	@labs/lab.sh stop
	@mkdir -p .state && go build -o .state/check ./labs/check
	@cluster/with-cluster.sh .state/check $*

.PHONY: trace-%
trace-%: cluster ## one object's trip through stage N (OBJ=logger/lab/audit; DELETE=1 or DELETE=foreground: its deletion too): timeline, and a Mermaid diagram in .state/trace/.
	@labs/trace.sh $*

.PHONY: lab-stop
lab-stop: ## Stop the operator that a lab started in the background, and remove the admission policies or webhooks it installed.
	@labs/lab.sh stop

.PHONY: lab-kill
lab-kill: ## Kill the lab's operator (SIGKILL, as a crash would), leaving everything its lab set up.
	@labs/lab.sh kill

# ----------------------------------------------------------------- tests ---

# workspace/ holds learners' exercise copies: never part of the repo's tests.
GO_PKGS   = $(shell go list ./... | grep -v /workspace/)
E2E_PKGS  = $(filter %/e2e,$(GO_PKGS))
UNIT_PKGS = $(filter-out %/e2e,$(GO_PKGS))
# The packages with code besides tests (go build refuses the others).
BUILD_PKGS = $(shell go list -f '{{if .GoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v /workspace/)

.PHONY: test
test: $(CLUSTER_TOOLS) ## Unit tests, then every stage's e2e tests on one shared cluster (README's test command).
	@echo ">> go mod verify"
	@go mod verify
	@echo ">> go vet"
	@go vet $(GO_PKGS)
	@echo ">> lint"
	@$(MAKE) lint
	@echo ">> generated code and manifests are up to date"
	@$(MAKE) verify
	@echo ">> unit tests"
	@go test -count=1 $(UNIT_PKGS)
	@echo ">> a short fuzz pass"
	@$(MAKE) fuzz FUZZTIME=10000x
	@echo ">> e2e tests, one stage after another on one cluster"
	@cluster/with-cluster.sh go test -count=1 -p 1 -timeout 40m $(E2E_PKGS)

# Every fuzz test of the stages and the day-two modules (func Fuzz... in a
# _test.go file), each for FUZZTIME. The seeds in the test files run in the unit tests anyway; this
# explores beyond them. FUZZTIME is a count of inputs (`Nx`), not a duration:
# in Go 1.26 a duration's deadline can race the fuzz workers' shutdown and
# fail a run with a bare "context deadline exceeded" and no failing input
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 50000x
.PHONY: fuzz
fuzz: ## A short fuzz pass over the operators' pure functions and A3's conversions (FUZZTIME=50000x inputs per fuzz test).
	@for dir in $$(for f in $$(grep -rl --include='*_test.go' '^func Fuzz' $(STAGES) advanced 2>/dev/null); do dirname "$$f"; done | sort -u); do \
		for fn in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
			echo ">> fuzzing $$fn in ./$$dir (-fuzztime $(FUZZTIME))"; \
			go test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$dir/ || exit 1; \
		done; \
	done

.PHONY: unit
# docs/ reads kubectl's flags from ./bin/kubectl's --help (the flags the docs
# name must exist), so the unit tests need kubectl, not a cluster.
unit: $(BIN)/kubectl ## Unit tests only (no cluster).
	@go test -count=1 $(UNIT_PKGS)

# The linters and their settings are in .golangci.yml. golangci-lint takes
# folders, not import paths: every package's folder but workspace/'s.
LINT_DIRS = $(shell go list -f '{{.Dir}}' ./... | grep -v /workspace/ | sed 's|^$(ROOT)/|./|')

.PHONY: lint
lint: $(BIN)/golangci-lint ## Lint every package: golangci-lint and kube-api-linter, pinned (.golangci.yml).
	@$(BIN)/golangci-lint run $(LINT_DIRS)

.PHONY: e2e
e2e: $(CLUSTER_TOOLS) ## One stage's e2e tests: make e2e STAGE=3 (or STAGE=03, or a module: STAGE=A1).
	@test -n "$(STAGE)" || { echo "error: say which stage, e.g. make e2e STAGE=3" >&2; exit 2; }
	@test -n "$(call stage_dir,$(STAGE))" || { echo "error: no stage $(STAGE); stages are: $(STAGES), and the day-two modules $(notdir $(wildcard advanced/A*-*))" >&2; exit 2; }
	@cluster/with-cluster.sh go test -count=1 -timeout 30m -v ./$(call stage_dir,$(STAGE))/e2e/...

.PHONY: chaos
chaos: $(CLUSTER_TOOLS) ## The failure scenarios at full size (300 tickets, 300 Loggers) on stages 04 to 06.
	$(call kwok_only,300,chaos)
	@CHAOS_SCALE=300 go test -count=1 -timeout 60m -v -run TestReliability ./reliability/e2e/

# ----------------------------------------------------------------- bench ---

N ?= 1000
M ?= 100
BENCH_STAGES ?= 2,3,4,5,6

.PHONY: bench
bench: $(CLUSTER_TOOLS) ## The same workload on every stage (N tickets, M Loggers): table + chart in bench/results/, report in bench/README.md.
	$(call kwok_only,$(M),bench M=$(M))
	@cluster/with-cluster.sh sh -c 'go run ./bench --kubeconfig "$$E2E_KUBECONFIG" --tickets $(N) --loggers $(M) --stages $(BENCH_STAGES) --readme bench/README.md'

.PHONY: bench-loggers
bench-loggers: $(CLUSTER_TOOLS) ## The Logger targets' size: 200 Loggers (and N tickets) on stages 04 and 06, in bench/results/loggers-200/.
	$(call kwok_only,200,bench-loggers)
	@cluster/with-cluster.sh sh -c 'go run ./bench --kubeconfig "$$E2E_KUBECONFIG" --tickets $(N) --loggers 200 --stages 4,6 --out bench/results/loggers-200 --readme bench/README.md'

ROUNDS ?= 5

.PHONY: bench-targets
bench-targets: $(CLUSTER_TOOLS) ## The ticket targets on stages 04 and 06 over ROUNDS (5) rounds: median and range of each ratio, in bench/results/targets/.
	@cluster/with-cluster.sh sh -c 'go run ./bench --kubeconfig "$$E2E_KUBECONFIG" --tickets $(N) --loggers $(M) --stages 4,6 --repeat $(ROUNDS) --out bench/results/targets --readme bench/README.md'

TICKETS ?= 10000

.PHONY: bench-memory
bench-memory: $(CLUSTER_TOOLS) ## Stage 06's peak memory and CPU with TICKETS (10000) tickets: booking and idle, GOMEMLIMIT and GOGC from the environment (docs/memory.md).
	@cluster/with-cluster.sh sh -c 'go run ./bench --kubeconfig "$$E2E_KUBECONFIG" --memory $(TICKETS)'

# ---------------------------------------------------------------- upkeep ---

# Attendees bring macOS too. Cross-compiling proves the Go code builds there
# (no Linux-only calls); the scripts' portability is tools/portability_test.go.
CROSS ?= darwin/arm64
.PHONY: cross
cross: ## Compile every package, tests included, for other platforms (CROSS=darwin/arm64; space-separated GOOS/GOARCH list).
	@for p in $(CROSS); do \
		echo ">> GOOS=$${p%/*} GOARCH=$${p#*/}: go build and go vet (vet compiles the tests too)"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} go build $(BUILD_PKGS) && GOOS=$${p%/*} GOARCH=$${p#*/} go vet $(GO_PKGS) || exit 1; \
	done

.PHONY: vulncheck
vulncheck: ## Run govulncheck (pinned; needs the internet for its database).
	@GOBIN=$(BIN) go install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)
	@$(BIN)/govulncheck ./...

# The kind suite's own engine (tools/kind/dockerd.sh) keeps its data and its
# pid file in .state: it is stopped first, or it would run on without them.
.PHONY: clean
clean: lab-stop cluster-down ## Stop everything and remove .state (keeps ./bin).
	@[ ! -d $(STATE)/kind-dockerd ] || tools/kind/dockerd.sh stop
	@rm -rf $(STATE)
