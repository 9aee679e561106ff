GO ?= go

.PHONY: all build install test test-deps vet vet-darwin dist dist-check release bench chaos demo clean

all: build

# cx is built static, as the releases are (.goreleaser.yaml): no dynamic
# loader at the start of each of its processes. (The tests keep cgo: the
# race detector needs it.)
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=true -o cx ./cmd/cx
	CGO_ENABLED=0 $(GO) build -o cx-hook ./cmd/cx-hook
	CGO_ENABLED=0 $(GO) build -buildvcs=true -o cx-mcp ./cmd/cx-mcp

install:
	CGO_ENABLED=0 $(GO) install -buildvcs=true ./cmd/cx ./cmd/cx-hook ./cmd/cx-mcp

# The one test command (README, .ci/run): installs what the tests need
# (tmux, the pinned real Codex CLI versions), vets, then runs every test
# with the race detector and, beside them, builds the release snapshot and
# checks it as a user meets it (dist-check). The snapshot runs niced: most
# of it is building GoReleaser (minutes of CPU on a fresh machine), which
# the tests' idle stretches (the real Codex's sessions) absorb, so the
# tests' timing is theirs. Its log is printed after the tests'.
test: test-deps vet
	@log=$$(mktemp); nice -n 10 $(MAKE) --no-print-directory dist-check >"$$log" 2>&1 & snap=$$!; \
	$(GO) test -race -count=1 -timeout 60m ./...; tests=$$?; \
	wait $$snap; snapped=$$?; echo "== make dist-check (beside the tests): exit $$snapped"; cat "$$log"; rm -f "$$log"; \
	[ $$tests -eq 0 ] && [ $$snapped -eq 0 ]

test-deps:
	bash scripts/install-test-deps.sh

# staticcheck, pinned, from the Go module proxy (no go.mod entry: it is a
# tool of the check, not a dependency of cx).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# actionlint, pinned, the same way: the release workflow is linted, not run.
ACTIONLINT ?= github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

vet: vet-darwin
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(ACTIONLINT) .github/workflows/*.yml
	@bash scripts/check-platform-files.sh

# macOS cannot run here, but it must compile: every package and its tests
# are vetted (go vet type-checks the tests) for both Mac architectures;
# the release snapshot links cx for both.
vet-darwin:
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=darwin GOARCH=amd64 $(GO) vet ./...

# The release, as a snapshot into dist/ (.goreleaser.yaml: archives,
# checksums.txt, deb and rpm, the Homebrew formula; then the npm packages
# built from the archives, dist/npm); nothing is published.
# GoReleaser is pinned and run from the Go module proxy, as staticcheck is.
GORELEASER ?= github.com/goreleaser/goreleaser/v2@v2.15.1
dist:
	$(GO) run $(GORELEASER) release --snapshot --clean
	bash scripts/npm-packages.sh dist dist/npm

# A tag's release, published (the release workflow runs it, with the
# hosting's tokens): the same config and pin as the snapshot.
release:
	$(GO) run $(GORELEASER) release --clean

# The snapshot as a user meets it (scripts/release-check.sh): checksums,
# the archive's cx and its version, the installer from dist/, the formula's
# sums, the deb.
dist-check: dist
	bash scripts/release-check.sh

# A first session through cx and a second one that starts where it stopped,
# with the real Codex CLI against a local mock model.
demo:
	bash scripts/demo.sh

bench:
	bash scripts/bench.sh

# The chaos run alone (internal/testing/e2e TestChaos; make test runs it for 45 s
# per Codex version): DURATION per Codex version, SEED replays a schedule
# of faults, SCALE workers of each kind; a failed run keeps its folders
# (KEEP=always: a passing one's too; KEEP= none), its seed in the log.
DURATION ?= 3m
SEED ?=
SCALE ?= 1
KEEP ?= 1
chaos: test-deps
	CX_TEST_KEEP=$(KEEP) CX_CHAOS_DURATION=$(DURATION) CX_CHAOS_SEED=$(SEED) CX_CHAOS_SCALE=$(SCALE) $(GO) test -count=1 -timeout 0 -run '^TestChaos$$' -v ./internal/testing/e2e

clean:
	rm -f cx
