# persona-operator

LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GO_TEST_FLAGS ?=
BENCH_COUNT ?= 5

.PHONY: all
all: build

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRDs, RBAC role and webhook configuration.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify-generated
verify-generated: manifests generate ## Fail when generated files are not committed.
	@git diff --exit-code -- api config/crd || { echo "generated files are stale: run 'make manifests generate' and commit"; exit 1; }

.PHONY: test
test: manifests generate vet ## Run every test: unit tests, and envtest suites with the real kube-apiserver and the webhook.
	assets="$$(hack/envtest-binaries.sh)" && \
	KUBEBUILDER_ASSETS="$$assets" PERSONA_REQUIRE_ENVTEST=1 go test $(GO_TEST_FLAGS) ./...

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd from the Go module proxy into the envtest cache (idempotent).
	hack/envtest-binaries.sh

.PHONY: demo
demo: ## Run the operator on a local control plane, apply config/samples and print every persona's prompt.
	assets="$$(hack/envtest-binaries.sh)" && KUBEBUILDER_ASSETS="$$assets" go run ./hack/demo $(DEMO_FLAGS)

.PHONY: scale
scale: ## Measure convergence, fan-out, steady-state writes, webhook latency and memory at scale (not part of make test).
	assets="$$(hack/envtest-binaries.sh)" && KUBEBUILDER_ASSETS="$$assets" go run ./test/scale $(SCALE_FLAGS)

.PHONY: bench
bench: ## Run the benchmarks: render of a typical persona beside its floor, admission, per-turn bundle render.
	go test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) ./internal/render/ ./internal/admission/

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager and the kubectl-persona CLI into bin/.
	go build -o $(LOCALBIN)/manager ./cmd
	go build -o $(LOCALBIN)/kubectl-persona ./cmd/kubectl-persona

##@ Tools

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
