# persona-operator

# The release: the version of the images, of dist/install.yaml and of the
# Helm chart (make chart writes it into dist/chart/Chart.yaml).
VERSION ?= 0.1.0
IMAGE_REGISTRY ?= ghcr.io/persona-operator
# The manager's image.
IMG ?= $(IMAGE_REGISTRY)/persona-operator:v$(VERSION)
# The image that holds only /kubectl-persona, for agent images to COPY --from.
CLI_IMG ?= $(IMAGE_REGISTRY)/kubectl-persona:v$(VERSION)

# CONTAINER_TOOL builds and pushes the images (docker, or e.g. podman).
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl

LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE_VERSION ?= v5.8.2
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
HELM_VERSION ?= v4.3.1
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GO_TEST_FLAGS ?=
BENCH_COUNT ?= 5

# The Helm release of helm-deploy.
HELM_RELEASE ?= persona-operator
HELM_NAMESPACE ?= persona-operator-system
HELM_EXTRA_ARGS ?=

.PHONY: all
all: build

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRDs, RBAC role and webhook configuration.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint (.golangci.yml), with the version pinned here, over every package.
	$(GOLANGCI_LINT) run --timeout 15m ./...

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint and apply the fixes it can.
	$(GOLANGCI_LINT) run --timeout 15m --fix ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify
verify: manifests generate chart build-installer ## Fail when a generated file is not as committed: deepcopy, CRDs, RBAC, webhook, the chart and dist/install.yaml.
	@git diff --exit-code -- api config dist || { echo "generated files are stale: run 'make manifests generate chart build-installer' and commit the result" >&2; exit 1; }
	@untracked="$$(git ls-files --others --exclude-standard -- api config dist)" && [ -z "$$untracked" ] || { echo "generated files are not committed:" >&2; echo "$$untracked" >&2; exit 1; }

.PHONY: test
test: manifests generate vet chart-lint ## Run every test that runs as an ordinary user: unit tests, fuzz seeds, envtest suites with the real kube-apiserver and the webhook, the chart and installer checks.
	assets="$$(hack/envtest-binaries.sh)" && \
	KUBEBUILDER_ASSETS="$$assets" PERSONA_REQUIRE_ENVTEST=1 PERSONA_HELM="$(HELM)" go test $(GO_TEST_FLAGS) $$(go list ./... | grep -vx '$(TIMED_PACKAGES)') && \
	KUBEBUILDER_ASSETS="$$assets" PERSONA_REQUIRE_ENVTEST=1 go test $(GO_TEST_FLAGS) $(TIMED_PACKAGES)

# The webhooks' package measures how long reviews wait and how much memory
# they take under load of its own: it runs alone, after the others, whose
# CPU would otherwise stand in for the waits it measures.
TIMED_PACKAGES = github.com/persona-operator/persona-operator/internal/webhook

.PHONY: test-agents
test-agents: ## Run Claude Code, Codex and opencode (pinned, from the npm registry) through kubectl-persona launch and docs/agents.md's recipes against a model stub, and check what the model receives.
	clis="$$(hack/agent-clis.sh)" && \
	PERSONA_AGENT_CLIS="$$clis" PERSONA_REQUIRE_AGENTS=1 go test -count=1 -v -timeout 20m ./test/agents

.PHONY: test-rollouts
test-rollouts: ## Run AnalysisRuns through Argo Rollouts' own controller (built once from the Go module proxy by hack/argo-rollouts.sh) on a local control plane.
	assets="$$(hack/envtest-binaries.sh)" && rollouts="$$(hack/argo-rollouts.sh)" && \
	KUBEBUILDER_ASSETS="$$assets" ARGO_ROLLOUTS_DIR="$$rollouts" PERSONA_REQUIRE_ENVTEST=1 PERSONA_REQUIRE_ROLLOUTS=1 \
		go test -count=1 -v -timeout 10m ./test/rollouts

# E2E_EDITS is how many prompt edits the e2e suite measures edit -> pod over
# (empty: 21), and edit -> Codex's model request (at most 10).
E2E_EDITS ?=
# E2E_RUN runs only the tests and checks it matches (go test -run), e.g.
# TestDelivery/RealHarnessGetsEachEdit: the cluster's set-up and that check.
E2E_RUN ?=

.PHONY: test-e2e e2e
test-e2e e2e: helm ## Run the single-node e2e suite (root): dist/install.yaml, then the chart, with the built image on a kubelet with a pod network, running config/samples' agent, also with the real Codex CLI (pinned, from the npm registry); builds the node's binaries once.
	assets="$$(hack/envtest-binaries.sh)" && node="$$(hack/e2e-binaries.sh)" && hack/e2e-node.sh && clis="$$(hack/agent-clis.sh codex)" && \
	KUBEBUILDER_ASSETS="$$assets" PERSONA_E2E_BINARIES="$$node" PERSONA_AGENT_CLIS="$$clis" PERSONA_REQUIRE_E2E=1 PERSONA_E2E_EDITS="$(E2E_EDITS)" PERSONA_HELM="$(HELM)" \
		go test -count=1 -v -timeout 25m $(if $(E2E_RUN),-run '$(E2E_RUN)') ./test/e2e

.PHONY: e2e-fast
e2e-fast: ## The e2e suite with 3 prompt edits instead of 21, for iteration.
	$(MAKE) --no-print-directory test-e2e E2E_EDITS=3

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd from the Go module proxy into the envtest cache (idempotent).
	hack/envtest-binaries.sh

.PHONY: argo-rollouts
argo-rollouts: ## Build Argo Rollouts' controller from the Go module proxy, with its CRDs and ClusterRole, into its cache (idempotent).
	hack/argo-rollouts.sh

.PHONY: demo
demo: ## Run the operator on a local control plane, apply config/samples and print every persona's prompt, persona.md and provenance, and one refused object (manager log in bin/demo/).
	assets="$$(hack/envtest-binaries.sh)" && KUBEBUILDER_ASSETS="$$assets" go run ./hack/demo $(DEMO_FLAGS)

.PHONY: scale
scale: ## Measure convergence, fan-out, steady-state writes, webhook latency and memory at scale (not part of make test).
	assets="$$(hack/envtest-binaries.sh)" && KUBEBUILDER_ASSETS="$$assets" go run ./test/scale $(SCALE_FLAGS)

.PHONY: scale-curve
scale-curve: ## Measure at N=500, 2000 and 8000, 3 rounds each, and how time and memory per Persona grow with N (about 2 hours 30 minutes; SCALE_FLAGS adds to it, e.g. -rounds 1: 45 minutes).
	$(MAKE) --no-print-directory scale SCALE_FLAGS='-curve 500,2000,8000 -steady 20s $(SCALE_FLAGS)'

.PHONY: bench
bench: ## Run the benchmarks: render of a typical persona beside its floor, admission, per-turn bundle render, pod injection.
	go test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) ./internal/render/ ./internal/admission/ ./internal/webhook/

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager and the kubectl-persona CLI into bin/.
	go build -o $(LOCALBIN)/manager ./cmd
	go build -o $(LOCALBIN)/kubectl-persona ./cmd/kubectl-persona

# make image builds both images without a container engine, as OCI image
# layout tarballs (bin/images/manager.tar for IMG, bin/images/kubectl-persona.tar
# for CLI_IMG) equal to the Dockerfile's targets; IMAGE_ARCH picks the
# architecture. Load them with ctr, kind, minikube, podman or skopeo
# (docs/install.md, Images).
IMAGE_ARCH ?= $(shell go env GOARCH)
.PHONY: image
image: ## Build the manager's image IMG and the image CLI_IMG as OCI tarballs in bin/images, without a container engine.
	go run ./hack/image -manager $(IMG) -kubectl-persona $(CLI_IMG) -version v$(VERSION) -arch $(IMAGE_ARCH) -out $(LOCALBIN)/images

# The Dockerfile's default target is the manager's image; its target
# kubectl-persona is an image that holds only /kubectl-persona. To build for
# another platform: make docker-build CONTAINER_BUILD_ARGS=--platform=linux/arm64
.PHONY: docker-build
docker-build: ## Build the manager's image IMG.
	$(CONTAINER_TOOL) build $(CONTAINER_BUILD_ARGS) --build-arg VERSION=v$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the manager's image IMG.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: docker-build-cli
docker-build-cli: ## Build the image CLI_IMG that holds only /kubectl-persona (for COPY --from in agent images).
	$(CONTAINER_TOOL) build $(CONTAINER_BUILD_ARGS) --build-arg VERSION=v$(VERSION) --target kubectl-persona -t $(CLI_IMG) .

.PHONY: docker-push-cli
docker-push-cli: ## Push the image CLI_IMG.
	$(CONTAINER_TOOL) push $(CLI_IMG)

# PLATFORMS are the platforms docker-buildx builds both images for, and pushes.
# As kubebuilder's: Dockerfile.cross builds the binaries on the build platform
# (cross-compiling to each target) rather than under emulation.
PLATFORMS ?= linux/amd64,linux/arm64
.PHONY: docker-buildx
docker-buildx: ## Build and push IMG and CLI_IMG for PLATFORMS with docker buildx.
	sed -e '1 s/\(^FROM\)/FROM --platform=\$$\{BUILDPLATFORM\}/; t' -e ' 1,// s//FROM --platform=\$$\{BUILDPLATFORM\}/' Dockerfile > Dockerfile.cross
	- $(CONTAINER_TOOL) buildx create --name persona-operator-builder
	$(CONTAINER_TOOL) buildx use persona-operator-builder
	- $(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) --build-arg VERSION=v$(VERSION) --tag $(IMG) -f Dockerfile.cross . && \
	  $(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) --build-arg VERSION=v$(VERSION) --target kubectl-persona --tag $(CLI_IMG) -f Dockerfile.cross .
	- $(CONTAINER_TOOL) buildx rm persona-operator-builder
	rm Dockerfile.cross

# kustomize-default prints config/default with the manager's image set to IMG.
# kubebuilder runs 'kustomize edit set image' in config/manager, which leaves
# config/manager/kustomization.yaml changed; this runs it in a throw-away
# overlay of config/default under bin/ instead, so config/ is never written.
define kustomize-default
overlay="$$(mktemp -d "$(LOCALBIN)/overlay.XXXXXX")" && trap 'rm -rf "$$overlay"' EXIT && \
printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../config/default\n' >"$$overlay/kustomization.yaml" && \
(cd "$$overlay" && "$(KUSTOMIZE)" edit set image controller=$(IMG)) && \
"$(KUSTOMIZE)" build "$$overlay"
endef

.PHONY: build-installer
build-installer: manifests chart kustomize ## Write dist/install.yaml (everything, for one 'kubectl apply -f') with the image IMG, and the chart's CRDs.
	@mkdir -p dist
	@$(kustomize-default) >dist/install.yaml.tmp
	@grep -q 'image: $(IMG)$$' dist/install.yaml.tmp || { rm -f dist/install.yaml.tmp; echo "dist/install.yaml: the Deployment's image is not $(IMG): does config/manager still name it 'controller'?" >&2; exit 1; }
	@mv dist/install.yaml.tmp dist/install.yaml
	@echo "wrote dist/install.yaml (image $(IMG))"

.PHONY: chart
chart: manifests ## Copy the CRDs into the Helm chart (dist/chart/crds) and set its version to VERSION.
	rm -f dist/chart/crds/*.yaml
	cp config/crd/bases/*.yaml dist/chart/crds/
	sed -e 's/^version: .*/version: $(VERSION)/' -e 's/^appVersion: .*/appVersion: "v$(VERSION)"/' dist/chart/Chart.yaml >dist/chart/Chart.yaml.tmp
	mv dist/chart/Chart.yaml.tmp dist/chart/Chart.yaml

.PHONY: chart-lint
chart-lint: helm ## Lint the Helm chart, with its default values and each of dist/chart/ci/*-values.yaml.
	$(HELM) lint --strict dist/chart
	@for f in dist/chart/ci/*-values.yaml; do \
		echo "$(HELM) lint --strict dist/chart -f $$f"; \
		$(HELM) lint --strict dist/chart -f "$$f" || exit 1; \
	done

##@ Deployment

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Delete the CRDs, and with them every Persona and PromptLayer, from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy config/default, with the image IMG, to the cluster of the current kubeconfig.
	$(kustomize-default) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Delete what deploy installed, CRDs included.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: helm-deploy
helm-deploy: helm ## Install or upgrade the chart, with the image IMG, as release HELM_RELEASE in HELM_NAMESPACE.
	img="$(IMG)" && $(HELM) upgrade --install $(HELM_RELEASE) dist/chart --namespace $(HELM_NAMESPACE) --create-namespace \
		--set image.repository="$${img%:*}" --set image.tag="$${img##*:}" \
		--wait --timeout 5m $(HELM_EXTRA_ARGS)

.PHONY: helm-uninstall
helm-uninstall: helm ## Uninstall the release HELM_RELEASE (the CRDs stay).
	$(HELM) uninstall $(HELM_RELEASE) --namespace $(HELM_NAMESPACE)

##@ Tools

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)

.PHONY: kustomize
kustomize: $(KUSTOMIZE)
$(KUSTOMIZE): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/kustomize $(KUSTOMIZE)

.PHONY: helm
helm: $(HELM)
$(HELM): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/helm $(HELM)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT)
$(GOLANGCI_LINT): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $(GOLANGCI_LINT)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
