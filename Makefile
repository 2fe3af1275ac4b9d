# reconcilekit: the two commands a newcomer needs are `make test` and `make demo`.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go

CONTROLLER_GEN_VERSION := v0.23.0
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)

# ENVTEST_ASSETS prints the directory holding kube-apiserver and etcd,
# building them from the Go module proxy into the user cache the first time
# (about 10 minutes on 2 cores), reusing them afterwards. An existing
# KUBEBUILDER_ASSETS is honoured and nothing is built.
ENVTEST_ASSETS = $(GO) run ./internal/cmd/envtest-assets

.PHONY: test
test: ## Obtain envtest assets, vet, check formatting, run every test with -race.
	@assets="$$($(ENVTEST_ASSETS))"; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi; \
	$(GO) vet ./...; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -race -count=1 $(TESTFLAGS) ./...

.PHONY: demo
demo: ## Run the At operator's demo against an embedded control plane.
	@if [ -d examples/at/cmd/demo ]; then \
		assets="$$($(ENVTEST_ASSETS))"; \
		KUBEBUILDER_ASSETS="$$assets" $(GO) run ./examples/at/cmd/demo; \
	else \
		echo "The At operator demo is not built yet (see examples/at)."; \
	fi

.PHONY: assets
assets: ## Build (or find) the envtest binaries and print their directory.
	@$(ENVTEST_ASSETS)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and CRD manifests.
	$(CONTROLLER_GEN) object paths=./internal/testapi/...
	$(CONTROLLER_GEN) crd paths=./internal/testapi/... output:crd:artifacts:config=internal/testapi/crd
	@if [ -d examples/at/api ]; then \
		$(CONTROLLER_GEN) object paths=./examples/at/api/...; \
		$(CONTROLLER_GEN) crd paths=./examples/at/api/... output:crd:artifacts:config=examples/at/config/crd; \
	fi

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

.PHONY: help
help:
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'
