# Clearhouse: make targets. `make test` is the test command CI runs.
GO       ?= go
BIN      ?= bin/clearhouse
AGENT_BIN ?= bin/clearhouse-agent
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
PKGS     ?= ./...
BENCH    ?= .
BENCHTIME ?= 1s
# Base images of the Docker build; pin by digest (docs/operating.md, "Docker").
GO_IMAGE      ?= golang:1.26-bookworm
RUNTIME_IMAGE ?= debian:bookworm-slim
IMAGE         ?= clearhouse:$(VERSION)

.PHONY: all build test test-short bench run generate check-generated check-tidy lint fmt clean docker check-deploy kube-build kube-up kube-down oidc-build

all: build

# No -trimpath here: it changes every package's compile, so `make build` would rebuild
# what `go run ./cmd/clearhouse` and `go test` have cached; -ldflags -X only changes
# the link. The Dockerfile's release build keeps -trimpath.
# Two binaries: the server (every verb, the agent without its kubernetes backend) and
# clearhouse-agent (the cluster agent with every backend; docs/command-line.md).
build: generate
	@echo "Compiling $(BIN) and $(AGENT_BIN) (the first build takes a few minutes; later ones take seconds)..."
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/clearhouse
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(AGENT_BIN) ./cmd/clearhouse-agent

## test: every test, in two passes: every package with the race detector, and without
## it the long tests whose work is not concurrency (NORACE_RUN in NORACE_PKGS), which
## skip under -race (racetest.SkipUnderRace) or run 20 of their property checks there
## (racetest.FewerRapidChecksUnderRace: fleet's) and all of them in the second pass.
## Set CLEARHOUSE_TEST_POSTGRES to a PostgreSQL URL to run the store tests on
## PostgreSQL as well.
## The two passes run at the same time, the second at a lower priority (NORACE_NICE),
## so that it takes the processors the race pass leaves idle (its waiting packages,
## its tail) and otherwise yields to it. Both run through internal/testtimeline,
## which prints go test's usual output (ok lines, failures) and then each test
## binary's start, end and CPU, and the machine's busy processors every 30 s
## (docs/testing.md, "The CI timeline (seventh round)").
test:
	$(GO) build $(TEST_FLAGS) -o $(TIMELINE) ./internal/testtimeline
	$(GO) build $(TEST_FLAGS) -o $(TEST_BIN) ./cmd/clearhouse
	CLEARHOUSE_TEST_BINARY=$(abspath $(TEST_BIN)) $(TIMELINE) \
	  -- race $(GO) test $(TEST_FLAGS) -race -count=1 -timeout 60m -p $(TEST_P) $(if $(filter ./...,$(PKGS)),$(TEST_FIRST)) $(PKGS) \
	  -- norace nice -n $(NORACE_NICE) $(GO) test $(TEST_FLAGS) -count=1 -timeout 30m -run '$(NORACE_RUN)' $(NORACE_PKGS)

# Build flags of make test: -trimpath makes the test binaries independent of the
# checkout's path, so that a clone elsewhere (CI's, a second worktree) reuses what the
# build cache holds of an earlier run instead of compiling and linking everything
# again (docs/testing.md, "Build cache across clones"). .ci/run sets it for every
# command through GOFLAGS.
TEST_FLAGS ?= -trimpath

# The niceness of the pass without the race detector, relative to the race pass's:
# at 10 a runnable thread of it weighs about a tenth of one of the race pass's.
NORACE_NICE ?= 10

# The test command's wrapper (internal/testtimeline), and the clearhouse binary the
# end-to-end tests run as a child process (e2etest.Binary), built once for every
# package and both passes instead of once a package and pass (a link: about 8 s of
# CPU each, three times in make test).
TIMELINE ?= bin/testtimeline
TEST_BIN ?= bin/clearhouse-test

# How many test binaries the race pass runs at once (go test's -p, by default GOMAXPROCS:
# 2 here). The end-to-end packages and agent/slurm mostly wait on Chromium, Slurm, the
# control plane or child servers (e2e/slurm used 8 s of CPU in 192 s), so a third
# binary runs in that time: e2e/browser, e2e/slurm and e2e/ops took 422 s with -p 2 and
# 233 s with -p 3, each package as long as alone (docs/testing.md).
TEST_P ?= 3

# The race pass's longest packages, started first: go test starts the test binaries
# in the order of its arguments (a package named twice runs once, where first named),
# and in ./...'s alphabetical order fleet (231 s in CI) started after 25 other
# packages, e2e/browser (309 s) after 18. The packages that mostly wait (on Slurm, the control plane, child
# servers) alternate with those that work, so that two of the three binaries at a
# time keep the two cores busy.
TEST_FIRST ?= ./e2e/browser ./e2e/slurm ./fleet ./e2e/ops ./cmd/clearhouse ./e2e/kube ./costs ./agent/slurm ./exchange

# The tests that call racetest.SkipUnderRace, and their packages: the race detector
# multiplied their CPU time several times and has nothing to find in them (docs/testing.md);
# and fleet's property tests, 20 random cases under -race and rapid's 100 here (fleet's race
# pass: 187 s of CPU, the test binary's and PostgreSQL's, before; 82 s after, and 49 s here).
# The root package's TestEveryRaceSkipRunsWithoutRace fails when such a test is missing here.
NORACE_PKGS ?= ./auction ./scheduler ./exchange ./e2e/ops ./fleet
NORACE_RUN  ?= ^(TestCATSFinalRound|TestGeneratedCATSFinalRound|TestEconAcceptsFiveTimesGreedysValueOnTheMapReduceMix|TestFractionalPredictorAlsoBeatsGreedy|TestUpperBoundMatchesLP|TestUpperBoundFeasible|TestAllocationWithUseMatchesLP|TestAHundredThousandOrdersPreviewCloseAndSettle|TestKilledSettlementLeavesNothingPartialOnSQLite|TestKilledSettlementLeavesNothingPartialOnPostgres|TestRandomInterleavingsKeepEveryInvariant|TestReplayedPlanEqualsRebuild|TestStartsNeverPrecedeArrival)$$

## test-short: the quick loop while developing: every test but the slow ones (browser,
## real clusters, crash, replica, long scale runs), which skip under -short (docs/testing.md).
test-short:
	$(GO) test $(TEST_FLAGS) -short $(PKGS)

## bench: every benchmark (BENCH=regexp to choose, BENCHTIME=5x to shorten).
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) $(PKGS)

## run: the application on the embedded SQLite with demo data.
run: build
	./$(BIN) serve --demo

## generate: templ components to Go (generated files are committed).
generate:
	$(GO) tool templ generate

## check-generated: fail when committed generated files are out of date.
check-generated: generate
	@git diff --exit-code --stat -- '*_templ.go' || (echo "generated templ files are out of date: run 'make generate' and commit" >&2; exit 1)
	@untracked=$$(git ls-files --others --exclude-standard -- '*_templ.go'); \
	  if [ -n "$$untracked" ]; then echo "uncommitted generated files: $$untracked" >&2; exit 1; fi

## check-tidy: fail when `go mod tidy` would change go.mod or go.sum, of the product's
## module and of the test control plane's own modules (tools/kube, tools/kueue) and of the sign-in tests' provider (tools/oidc). Prints the diff.
check-tidy:
	@$(GO) mod tidy -diff || (echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit" >&2; exit 1)
	@for m in tools/kube tools/kueue tools/oidc; do \
	  (cd $$m && $(GO) mod tidy -diff) || { echo "$$m/go.mod/go.sum are not tidy: run 'cd $$m && go mod tidy' and commit" >&2; exit 1; }; \
	done

## lint: formatting, vet and staticcheck (pinned in go.mod as a tool).
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

## docker: the image, with the version and base images passed as build arguments.
docker:
	docker build --build-arg VERSION=$(VERSION) --build-arg GO_IMAGE=$(GO_IMAGE) \
	  --build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE) -t $(IMAGE) .

## check-deploy: the Prometheus scrape configuration, the alert rules and their unit tests,
## the dashboard's JSON, and the server manifest's probes, ports and grace period.
check-deploy:
	promtool check config deploy/prometheus/prometheus.yml
	promtool check rules deploy/prometheus/clearhouse-alerts.yml
	promtool test rules deploy/prometheus/clearhouse-alerts.test.yml
	$(GO) test -count=1 -run 'TestDeploy' ./metrics
	$(GO) test -count=1 -run 'TestDeployServerManifest' ./cmd/clearhouse

## kube-build: the test control plane's binaries (tools/kube) and Kueue's controller
## (tools/kueue), cached; ~12 and ~4 min cold.
kube-build:
	./scripts/kube-build.sh
	./scripts/kueue-build.sh

## oidc-build: the sign-in tests' OpenID Provider (tools/oidc), cached; ~1 min cold.
oidc-build:
	./scripts/oidc-build.sh

## kube-up: a Kubernetes control plane on loopback for the tests and docs/kubernetes.md, with
## Kueue's CRDs and controller (KUBE_UP_FLAGS=--no-kueue to leave Kueue out); prints the
## kubeconfig to export.
kube-up:
	./scripts/kube-up.sh $(KUBE_UP_FLAGS)

## kube-down: stop that control plane and remove its state.
kube-down:
	./scripts/kube-down.sh

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')

clean:
	rm -rf bin

# A real single-machine Slurm for agent/slurm's tests (docs/slurm.md): eval "$(make -s slurm-up)".
.PHONY: slurm-up slurm-down
slurm-up:
	@scripts/slurm-up.sh
slurm-down:
	@scripts/slurm-down.sh
