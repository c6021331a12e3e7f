# The manager's image (the default target) and, with --target kubectl-persona,
# an image that holds only /kubectl-persona, for agent images to take with
#   COPY --from=ghcr.io/persona-operator/kubectl-persona:v0.1.0 /kubectl-persona /usr/local/bin/
# make docker-build IMG=... and make docker-build-cli CLI_IMG=... build them.

# Override BASE_IMAGE to build from another registry, e.g.
# docker build --build-arg BASE_IMAGE=docker.io/library/golang:1.26 .
ARG BASE_IMAGE=golang:1.26
FROM ${BASE_IMAGE} AS builder

WORKDIR /workspace
# Copy the Go Modules manifests
COPY go.mod go.mod
COPY go.sum go.sum
# cache deps before building and copying source so that we don't need to re-download as much
# and so that source changes don't invalidate our downloaded layer
RUN go mod download

# Copy the Go source (.dockerignore keeps only the sources the binaries build from)
COPY . .

# Each binary is built in a stage of its own, so that building one image does
# not build the other's binary.
# the GOARCH has no default value to allow the binary to be built according to the host where the command
# was called. For example, if we call make docker-build in a local env which has the Apple Silicon M1 SO
# the docker BUILDPLATFORM arg will be linux/arm64 when for Apple x86 it will be linux/amd64. Therefore,
# by leaving it empty we can ensure that the container and binary shipped on it will have the same platform.
FROM builder AS build-manager
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -a -trimpath -ldflags="-s -w -X github.com/persona-operator/persona-operator/internal/version.Version=${VERSION}" -o manager ./cmd

FROM builder AS build-kubectl-persona
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -a -trimpath -ldflags="-s -w -X github.com/persona-operator/persona-operator/internal/version.Version=${VERSION}" -o kubectl-persona ./cmd/kubectl-persona

# kubectl-persona, alone: a static binary in an otherwise empty image.
FROM scratch AS kubectl-persona
COPY --from=build-kubectl-persona /workspace/kubectl-persona /kubectl-persona
USER 65532:65532
ENTRYPOINT ["/kubectl-persona"]

# The manager (the default target: the last stage).
# Use distroless as minimal base image to package the manager binary
# Refer to https://github.com/GoogleContainerTools/distroless for more details
FROM gcr.io/distroless/static:nonroot AS manager
WORKDIR /
COPY --from=build-manager /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
