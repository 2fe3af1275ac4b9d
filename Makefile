# reconcilekit: the two commands a newcomer needs are `make test` and `make demo`.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go

# controller-gen runs through `go run` of a pinned version: nothing to install.
CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
GENERATED := internal/testapi examples/at/api examples/at/config/crd examples/at/config/rbac/role.yaml \
	examples/embedding/api examples/embedding/config/crd \
	examples/secretmirror/api examples/secretmirror/config/crd examples/secretmirror/config/rbac/role.yaml \
	examples/webapp/api examples/webapp/config/crd examples/webapp/config/rbac/role.yaml

# ENVTEST_ASSETS prints the directory holding kube-apiserver and etcd,
# building them from the Go module proxy into the user cache the first time
# (about 10 minutes on 2 cores), reusing them afterwards. An existing
# KUBEBUILDER_ASSETS is honoured and nothing is built.
ENVTEST_ASSETS = $(GO) run ./cmd/envtest-assets
# CONTROLLER_ASSETS are what the tests of children's health need beside the
# API server (testenv.Options.ControllerManager and Kwok): the health
# package's and the embedding guide's run kube-controller-manager and kwok,
# so that Deployments roll out and Jobs fail as in a cluster. Built once
# (about 2 minutes on 2 cores after kube-apiserver), then cached.
CONTROLLER_ASSETS = -controller-manager -kwok $(KWOK_VERSION)
# APICOMPAT compares the exported API with the last release (.ci/releases)
# and fails on an incompatible change CHANGELOG.md does not name under
# Unreleased (docs/releasing.md, "The API check").
APICOMPAT = $(GO) run ./internal/cmd/apicompat
# TESTPARALLEL is how much of make test runs at once: four packages (-p 4,
# go test's default is the number of CPUs). Most of an envtest package's
# time is spent waiting (for a control plane to start, a Lease to expire, a
# schedule to fall due, a cache to catch up), not computing: on 2 cores,
# four packages overlap where two left the CPU idle. (-parallel stays
# go test's: Ginkgo refuses any other; examples/at/bench sets its own.) A
# package may take longer than go test's default timeout of 10 minutes on a
# loaded machine.
TESTPARALLEL ?= -p 4 -timeout 45m
# TESTLINK links the test binaries without DWARF (-ldflags=-w): nothing make
# test runs reads it (a race report, a panic and a failed test name their
# functions, files and lines from the binary's own tables, which stay). A
# race-built test binary takes about 3.3 s of CPU to link, most of it
# reading the packages' objects (TESTBIN below links only those whose code
# changed); the DWARF phases are about an eighth of a link. A debugger wants
# DWARF: go test builds it when run without make.
TESTLINK ?= -ldflags=-w
# TESTRUNTIME is the Go runtime's settings for every process make test
# starts: the test binaries and, through them, kube-apiserver, etcd and the
# operators they run. make test runs four packages at once on 2 cores, a
# dozen processes or more: with GOMAXPROCS at the number of cores each
# process runs threads on every core (spinning for work that another process
# holds the core for, collecting garbage). One P each (GOMAXPROCS=1) and
# fewer collections (GOGC=400: the heap grows to five times what is live
# before one, not twice; the tests' processes are small beside the machine's
# memory) measured, on this repository's 2-core machine with warm caches:
# make test 881 CPU-s before (a clean clone's .ci/run), 778 with
# GOMAXPROCS=1 alone and 737 with both (one run each), and a clean clone's
# .ci/run with both 740-875 in four runs, 805-1,023 in six before (runs of
# the same code vary by up to a quarter); a kube-apiserver start alone
# 2.4-3.0 CPU-s before (11 runs) and 1.9-2.1 with GOMAXPROCS=1 (3 runs).
# Tests still run in parallel (goroutines, not cores, are what t.Parallel
# and the race detector need). make test TESTRUNTIME= runs with Go's
# defaults.
TESTRUNTIME ?= GOMAXPROCS=1 GOGC=400
# TESTFIRST are the packages whose tests take longest, slowest first: go
# test starts packages in the order it is given them, so these start at
# once instead of in alphabetical turn, and none is left running alone at
# the end; ./... then adds every other package, each package once.
TESTFIRST := ./examples/at/bench ./shard/follow ./examples/at/internal/e2e ./examples/at/internal/controller \
	./examples/embedding/step6 ./reconcile/reconciletest ./freshness ./shard/ranges
# TESTBIN keeps the test binaries make test links, so that the next run
# links only those whose code changed: go test -o DIR writes each package's
# binary there and, as go install does, links none whose binary in DIR
# already has the build ID the build would give it. Linking the ~57
# race-built binaries is about a fifth of make test's CPU. go test -o
# needs one binary name per package in a directory, and three packages are
# called controller and two apicompat: the packages are cut into groups
# with one of each name, the first group run as before, the others beside
# it (each a few seconds). The directory is in the user cache, shared by
# every checkout (the binaries are built with -trimpath), about 3 GB;
# delete it whenever you like.
TESTBIN ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/reconcilekit/testbin
# LIST_TESTED lists the packages of the patterns after it that have tests:
# go test -o counts a package without tests against the one binary name per
# directory too.
LIST_TESTED = $(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}'
# RACETEST is make test's go test command, for each of its groups and for
# the kubebuilder scaffold alike: the envtest binaries, TESTRUNTIME, -race and
# the flags above (assets is a shell variable the recipe sets).
RACETEST = KUBEBUILDER_ASSETS="$$assets" $(TESTRUNTIME) $(GO) test -race -count=1 $(TESTPARALLEL) $(TESTLINK) $(TESTFLAGS)
# SHARED_PLANES: make test starts two control planes of testenv.Serve
# (cmd/testenv-plane), one with kube-apiserver and etcd only, one with
# kube-controller-manager and kwok too, and names them in
# RECONCILEKIT_TESTENV_PLANES: the packages whose TestMain sets
# testenv.Options.Shared run on them instead of starting a plane each:
# the 26 such packages' planes (kube-apiserver, etcd, kube-controller-manager,
# kwok; sampled per process through a clean clone's .ci/run) took 126
# CPU-s, the two shared planes 81-88 in two runs; whole runs with and
# without them, taking turns: 874 and 810 CPU-s against 899 and 889. make
# test SHARED_PLANES= starts none (every package starts its own).
SHARED_PLANES ?= plain nodes
PLANE_FLAGS_plain :=
PLANE_FLAGS_nodes := -controller-manager -kwok
# examples/kubebuilder/memcached is a module of its own (the kubebuilder
# scaffold on reconcilekit): its vet and tests run in the background beside
# the main go test, their output printed after it, so that its 20 s are not
# added at the end (the main run leaves CPU idle in its last minutes).
# kwok plays the kubelet in the At demo (envtest has none).
KWOK_VERSION := v0.8.0

# make test builds with -trimpath (exported in GOFLAGS, so that the go
# builds the tests run themselves do too): without it the build cache keys
# each package of this module by the directory it is in, and every fresh
# clone (CI's) compiles the module again, vet and -race, about 130 s of CPU
# on 2 cores; with it a clone reuses what any checkout of the same code
# compiled. The first -trimpath build of the dependencies is a one-time
# cost (about 9 CPU-minutes). verify-generate (and generate) run with it
# too: controller-gen loads this module's packages through the go command,
# which without it compiled them again in every fresh clone (39 s of CPU
# instead of 8).
TRIMPATH_GOFLAGS := $(if $(filter -trimpath,$(GOFLAGS)),$(GOFLAGS),$(strip $(GOFLAGS) -trimpath))
test generate verify-generate: export GOFLAGS := $(TRIMPATH_GOFLAGS)

.PHONY: test
test: verify-generate ## Obtain envtest assets, vet, check formatting, compare the API with the last release, run every test with -race.
	@assets="$$($(ENVTEST_ASSETS) $(CONTROLLER_ASSETS))"; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	scaffold_log="$$(mktemp)"; extra_log="$$(mktemp)"; planes_dir="$$(mktemp -d)"; plane_pids=; \
	trap 'code=$$?; [ -z "$$plane_pids" ] || kill $$plane_pids 2>/dev/null || true; \
	  for pid in $$plane_pids; do wait $$pid && continue; \
	  echo "a shared control plane did not stop cleanly:"; cat "$$planes_dir"/*.log || true; code=1; done; \
	  rm -rf "$$scaffold_log" "$$extra_log" "$$planes_dir"; exit $$code' EXIT; \
	if [ -n "$(strip $(SHARED_PLANES))" ]; then \
	  $(GO) build -o "$(TESTBIN)/testenv-plane" ./cmd/testenv-plane || exit 1; \
	  RECONCILEKIT_TESTENV_PLANES=; for plane in $(SHARED_PLANES); do \
	    case $$plane in plain) flags="$(PLANE_FLAGS_plain)";; nodes) flags="$(PLANE_FLAGS_nodes)";; \
	      *) echo "SHARED_PLANES: unknown plane $$plane (plain, nodes)"; exit 1;; esac; \
	    KUBEBUILDER_ASSETS="$$assets" $(TESTRUNTIME) "$(TESTBIN)/testenv-plane" -o "$$planes_dir/$$plane.json" $$flags \
	      > "$$planes_dir/$$plane.log" 2>&1 & plane_pids="$$plane_pids $$!"; \
	    RECONCILEKIT_TESTENV_PLANES="$${RECONCILEKIT_TESTENV_PLANES:+$$RECONCILEKIT_TESTENV_PLANES:}$$planes_dir/$$plane.json"; \
	  done; \
	fi; \
	unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi; \
	$(GO) vet ./... || exit 1; \
	$(APICOMPAT) || exit 1; \
	if $(GO) list -m all | grep -q '^k8s.io/kubernetes '; then echo "k8s.io/kubernetes leaked into go.mod"; exit 1; fi; \
	if $(GO) list -deps -test ./... | grep -qE '^(k8s.io/kubernetes|go.etcd.io/etcd/server)/'; then \
		echo "a package of k8s.io/kubernetes or etcd's server is compiled into reconcilekit"; exit 1; fi; \
	( cd examples/kubebuilder/memcached && $(GO) vet ./... && \
	  $(RACETEST) -o "$(TESTBIN)/memcached/" \
	    $$($(LIST_TESTED) ./... | grep -v /e2e) \
	) > "$$scaffold_log" 2>&1 & scaffold=$$!; \
	if [ -n "$(strip $(SHARED_PLANES))" ]; then \
	  export RECONCILEKIT_TESTENV_PLANES; \
	  for plane in $(SHARED_PLANES); do \
	    until [ -s "$$planes_dir/$$plane.json" ]; do \
	      if ! kill -0 $$plane_pids 2>/dev/null; then echo "the shared control plane $$plane did not start:"; cat "$$planes_dir"/*.log; exit 1; fi; \
	      sleep 0.2; done; \
	  done; \
	fi; \
	pkgs="$$($(LIST_TESTED) $(TESTFIRST) ./...)"; \
	group() { awk -F/ -v g="$$1" 'NF && ++seen[$$NF] == g' <<< "$$pkgs"; }; \
	( status=0; g=2; while [ -n "$$(group $$g)" ]; do \
	    $(RACETEST) -o "$(TESTBIN)/$$g/" $$(group $$g) || status=1; \
	    g=$$((g + 1)); done; exit $$status \
	) > "$$extra_log" 2>&1 & extra=$$!; \
	$(RACETEST) -o "$(TESTBIN)/1/" $$(group 1) && status=0 || status=$$?; \
	wait $$extra && extra_status=0 || extra_status=$$?; \
	echo "packages whose test binary shares its name with one above (run beside it: see TESTBIN)"; \
	cat "$$extra_log"; \
	wait $$scaffold && scaffold_status=0 || scaffold_status=$$?; \
	echo "examples/kubebuilder/memcached (its own module: the kubebuilder scaffold on reconcilekit; run beside the above)"; \
	cat "$$scaffold_log"; \
	[ "$$status" = 0 ] && [ "$$extra_status" = 0 ] && [ "$$scaffold_status" = 0 ]

.PHONY: apicompat
apicompat: ## Compare the exported API with the last release; fail on an incompatible change CHANGELOG.md does not name.
	@$(APICOMPAT)

.PHONY: demo
demo: ## Run the At operator's demo against an embedded control plane.
	@assets="$$($(ENVTEST_ASSETS) -kwok $(KWOK_VERSION))"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) run ./examples/at/cmd/demo $(DEMOFLAGS)

# make bench: the At operator like for like. Each controller is its own
# process with its own user on one audited envtest API server: the At as it
# ships, the same At written by hand on controller-runtime alone (recording
# the same), and the naive cnat-style controller (recording nothing); the
# first trial also runs the At on controller-runtime's read-your-writes
# guard. Every size of BENCH_ATS at one instant with every number of
# BENCH_WORKERS, in BENCH_ROUNDS rounds per size (the last repeated), the
# first size again with BENCH_UNRELATED Pods that no At owns and spread over
# BENCH_SPREAD (one round each); BENCH_SHARDED Ats at one instant on the At
# as one replica, then with --shards=6 as 3 replicas (one round; 0 skips
# it); the first trial also runs the At tracing every reconcile into memory
# against the At untraced (issue 49; -at.tracing=false leaves it out); with
# the benchmarks of compare, diet, drift, freshness and status folded in. Prints
# the tables and writes BENCHMARKS.md. Takes about 50 minutes on 2 cores
# with the defaults (42 measured without the sharded scenario, which took 8
# more at 10,000 Ats); not part of make test, which runs the same harness
# at 20 Ats and the sharded scenario at 60. BENCH_PROFILE=dir also writes a
# CPU profile of each controller process during the first run of each.
# The first BENCH_MEMORY_ROUNDS rounds of each size (0: every round) also run
# issue 38's memory comparison: the bare client-go floor and the At without
# its cache diet (about 20 more minutes with one round at the default sizes).
# The soak (issue 50), after the trials: the At and the hand-written At,
# each on a control plane of its own, run the same BENCH_SOAK_WAVES waves
# of BENCH_SOAK_N Ats (created, run to DONE, deleted; no At name used
# twice) side by side, each measured at the end of every wave (heap after a
# forced collection, goroutines, RSS, the library's maps, Event writes):
# about 12 minutes with the defaults. BENCH_SOAK_FOR (e.g. 30m) runs waves
# until that long has passed instead (BENCH_SOAK_WAVES=0). With
# BENCH_SOAK_OUTAGE (e.g. 10m; 0: none), one more wave whose Ats fall due
# while both API servers are stopped that long. BENCH_SOAK_WAVES=0 and
# BENCH_SOAK_FOR=0 skip the soak. make soak runs it alone and rewrites the
# soak's section of BENCHMARKS.md only, e.g. for half an hour:
#   make soak BENCH_SOAK_WAVES=0 BENCH_SOAK_FOR=30m
# make bench-tracing runs the tracing comparison of the first trial alone
# (the At and the same At traced, the first of BENCH_ATS at one instant
# with the first of BENCH_WORKERS, in the first of BENCH_ROUNDS rounds:
# 3 rounds of 1,000 Ats with the defaults, about 6 minutes) and rewrites
# the section "Tracing: what it costs the At" of BENCHMARKS.md only, where
# make bench puts it; BENCH_PROFILE=dir profiles both in the first round.
BENCH_SOAK_FOR ?= 0
BENCH_SOAK_WAVES ?= 12
BENCH_SOAK_N ?= 1000
BENCH_SOAK_OUTAGE ?= 0
SOAK_ARGS = -at.soak.for=$(BENCH_SOAK_FOR) -at.soak.waves=$(BENCH_SOAK_WAVES) -at.soak.n=$(BENCH_SOAK_N) -at.soak.outage=$(BENCH_SOAK_OUTAGE)
BENCH_ATS ?= 1000,10000
BENCH_WORKERS ?= 4
BENCH_ROUNDS ?= 3,2
BENCH_SPREAD ?= 1m
BENCH_UNRELATED ?= 5000
BENCH_SHARDED ?= 10000
BENCH_PROFILE ?=
BENCH_MEMORY_ROUNDS ?= 1

.PHONY: bench
bench: ## Measure the At operator against the hand-written and the naive At, and write BENCHMARKS.md.
	@assets="$$($(ENVTEST_ASSETS))"; \
	out="$$(mktemp)"; trap 'rm -f "$$out"' EXIT; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -run '^$$' -bench . -benchmem ./compare/ ./diet/ ./drift/ ./freshness/ ./recorder/ ./status/ | tee "$$out"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -run '^$$' -bench '^BenchmarkAt$$' -benchtime=1x -timeout 300m ./examples/at/bench/ \
		-args -at.n=$(BENCH_ATS) -at.workers=$(BENCH_WORKERS) -at.rounds=$(BENCH_ROUNDS) -at.spread=$(BENCH_SPREAD) -at.unrelated=$(BENCH_UNRELATED) -at.sharded=$(BENCH_SHARDED) -at.memory.rounds=$(BENCH_MEMORY_ROUNDS) \
		$(SOAK_ARGS) \
		$(if $(BENCH_PROFILE),-at.cpuprofile="$(abspath $(BENCH_PROFILE))") \
		-at.report="$(CURDIR)/BENCHMARKS.md" -at.diffbench="$$out" \
		-at.command="make bench BENCH_ATS=$(BENCH_ATS) BENCH_WORKERS=$(BENCH_WORKERS) BENCH_ROUNDS=$(BENCH_ROUNDS) BENCH_SPREAD=$(BENCH_SPREAD) BENCH_UNRELATED=$(BENCH_UNRELATED) BENCH_SHARDED=$(BENCH_SHARDED) BENCH_MEMORY_ROUNDS=$(BENCH_MEMORY_ROUNDS) BENCH_SOAK_FOR=$(BENCH_SOAK_FOR) BENCH_SOAK_WAVES=$(BENCH_SOAK_WAVES) BENCH_SOAK_N=$(BENCH_SOAK_N) BENCH_SOAK_OUTAGE=$(BENCH_SOAK_OUTAGE)$(if $(BENCH_PROFILE), BENCH_PROFILE=$(BENCH_PROFILE))"

.PHONY: soak
soak: ## Run the soak of make bench alone (BENCH_SOAK_ knobs) and rewrite the soak's section of BENCHMARKS.md.
	@assets="$$($(ENVTEST_ASSETS))"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -run '^$$' -bench '^BenchmarkSoak$$' -benchtime=1x -timeout 300m ./examples/at/bench/ \
		-args $(SOAK_ARGS) -at.soak.report="$(CURDIR)/BENCHMARKS.md" \
		-at.command="make soak BENCH_SOAK_FOR=$(BENCH_SOAK_FOR) BENCH_SOAK_WAVES=$(BENCH_SOAK_WAVES) BENCH_SOAK_N=$(BENCH_SOAK_N) BENCH_SOAK_OUTAGE=$(BENCH_SOAK_OUTAGE)"

.PHONY: bench-tracing
bench-tracing: ## Run make bench's tracing comparison alone and rewrite the tracing section of BENCHMARKS.md.
	@assets="$$($(ENVTEST_ASSETS))"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -run '^$$' -bench '^BenchmarkTracing$$' -benchtime=1x -timeout 120m ./examples/at/bench/ \
		-args -at.n=$(BENCH_ATS) -at.workers=$(BENCH_WORKERS) -at.rounds=$(BENCH_ROUNDS) \
		$(if $(BENCH_PROFILE),-at.cpuprofile="$(abspath $(BENCH_PROFILE))") \
		-at.tracing.report="$(CURDIR)/BENCHMARKS.md" \
		-at.command="make bench-tracing BENCH_ATS=$(BENCH_ATS) BENCH_WORKERS=$(BENCH_WORKERS) BENCH_ROUNDS=$(BENCH_ROUNDS)$(if $(BENCH_PROFILE), BENCH_PROFILE=$(BENCH_PROFILE))"

.PHONY: assets
assets: ## Build (or find) the envtest binaries (those make test needs) and print their directory.
	@$(ENVTEST_ASSETS) $(CONTROLLER_ASSETS)

.PHONY: generate
generate: ## Regenerate deepcopy code, CRD manifests and the example operators' RBAC roles from the Go sources.
	$(CONTROLLER_GEN) object paths=./internal/testapi/... paths=./examples/at/api/... paths=./examples/embedding/api/... paths=./examples/secretmirror/api/... paths=./examples/webapp/api/...
	$(CONTROLLER_GEN) crd paths=./internal/testapi/... output:crd:artifacts:config=internal/testapi/crd
	$(CONTROLLER_GEN) crd paths=./examples/at/api/... output:crd:artifacts:config=examples/at/config/crd
	$(CONTROLLER_GEN) crd paths=./examples/embedding/api/... output:crd:artifacts:config=examples/embedding/config/crd
	$(CONTROLLER_GEN) rbac:roleName=at-manager-role paths=./examples/at/internal/controller/... output:rbac:artifacts:config=examples/at/config/rbac
	$(CONTROLLER_GEN) crd paths=./examples/secretmirror/api/... output:crd:artifacts:config=examples/secretmirror/config/crd
	$(CONTROLLER_GEN) rbac:roleName=secretmirror-manager-role paths=./examples/secretmirror/internal/controller/... output:rbac:artifacts:config=examples/secretmirror/config/rbac
	$(CONTROLLER_GEN) crd paths=./examples/webapp/api/... output:crd:artifacts:config=examples/webapp/config/crd
	$(CONTROLLER_GEN) rbac:roleName=webapp-manager-role paths=./examples/webapp/internal/controller/... output:rbac:artifacts:config=examples/webapp/config/rbac

.PHONY: verify-generate
verify-generate: generate ## Fail when committed generated files are out of date.
	@if [ -n "$$(git status --porcelain -- $(GENERATED) 2>/dev/null)" ]; then \
		echo "generated files are out of date; run 'make generate' and commit:"; \
		git status --porcelain -- $(GENERATED); exit 1; \
	fi

# make docs: regenerate what docs/embedding.md shows from measurements: the
# table of API writes and requests of a converged resync at every step of
# the guide, measured on envtest. TestGuideTable (part of make test) fails
# when the committed table is stale.
.PHONY: docs
docs: ## Measure the embedding guide's steps on envtest and rewrite its table.
	@assets="$$($(ENVTEST_ASSETS) $(CONTROLLER_ASSETS))"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -count=1 -run '^TestGuideTable$$' ./examples/embedding/ -args -update

.PHONY: compare-flux
compare-flux: ## Measure an applyset.Set against Flux's ssa.ResourceManager on one set of 100 children (a module of its own).
	@assets="$$($(ENVTEST_ASSETS))"; \
	cd applyset/internal/fluxcompare && KUBEBUILDER_ASSETS="$$assets" $(GO) test -count=1 -v -run TestSetAgainstFluxResourceManager ./...

.PHONY: help
help:
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'
