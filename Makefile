GO ?= go

.PHONY: all build install test test-deps vet vet-darwin dist dist-check bench chaos demo clean

all: build

build:
	$(GO) build -buildvcs=true -o cx ./cmd/cx

install:
	$(GO) install -buildvcs=true ./cmd/cx

# The one test command (README, .ci/run): installs what the tests need
# (tmux, the pinned real Codex CLI versions), then vets and runs every test
# with the race detector.
test: test-deps vet dist-check
	$(GO) test -race -count=1 -timeout 60m ./...

test-deps:
	bash scripts/install-test-deps.sh

# staticcheck, pinned, from the Go module proxy (no go.mod entry: it is a
# tool of the check, not a dependency of cx).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet: vet-darwin
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@bash scripts/check-platform-files.sh

# macOS cannot run here, but it must compile: every package and its tests
# are vetted (go vet type-checks the tests) for both Mac architectures;
# dist links cx for both.
vet-darwin:
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=darwin GOARCH=amd64 $(GO) vet ./...

# Release binaries for Linux and macOS, version stamped, with SHA-256 sums.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
DIST_TARGETS = linux/amd64 linux/arm64 darwin/arm64 darwin/amd64
dist:
	VERSION=$(VERSION) bash scripts/dist.sh $(DIST_TARGETS)

# The linux/amd64 binary dist built runs and says its version.
dist-check: dist
	bash scripts/dist.sh --check

# A first session through cx and a second one that starts where it stopped,
# with the real Codex CLI against a local mock model.
demo:
	bash scripts/demo.sh

bench:
	bash scripts/bench.sh

# The chaos run alone (internal/testing/e2e TestChaos; make test runs it for 45 s
# per Codex version): DURATION per Codex version, SEED replays a schedule
# of faults, SCALE workers of each kind.
DURATION ?= 3m
SEED ?=
SCALE ?= 1
chaos: test-deps
	CX_CHAOS_DURATION=$(DURATION) CX_CHAOS_SEED=$(SEED) CX_CHAOS_SCALE=$(SCALE) $(GO) test -count=1 -timeout 0 -run '^TestChaos$$' -v ./internal/testing/e2e

clean:
	rm -f cx
