GO ?= go

.PHONY: all build install test test-deps vet bench demo clean

all: build

build:
	$(GO) build -buildvcs=true -o cx ./cmd/cx

install:
	$(GO) install -buildvcs=true ./cmd/cx

# The one test command (README, .ci/run): installs what the tests need
# (tmux, the pinned real Codex CLI versions), then vets and runs every test
# with the race detector.
test: test-deps vet
	$(GO) test -race -count=1 -timeout 60m ./...

test-deps:
	bash scripts/install-test-deps.sh

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...

# A first session through cx and a second one that starts where it stopped,
# with the real Codex CLI against a local mock model.
demo:
	bash scripts/demo.sh

bench:
	bash scripts/bench.sh

clean:
	rm -f cx
