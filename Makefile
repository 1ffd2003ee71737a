# orch — build, test, lint, demo, bench.
GO      ?= go
BIN     ?= bin/orch
PKGS    ?= ./...
# staticcheck, pinned: its checks are configured in staticcheck.conf.
STATICCHECK ?= v0.8.2

.PHONY: build test lint demo bench bench-quick bench-go fuzz clean

# orch and, beside it, orch-shim and orch-hook: the sandbox's shim alone, which orch runs before each local agent, and
# Claude Code's permission hook alone, which orch gives a local claude for every tool call, when it finds them there
# (they start in a millisecond or two; orch's own binary, which does the same work without them, takes ten or more).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/orch
	CGO_ENABLED=0 $(GO) build -trimpath -o $(dir $(BIN))orch-shim ./cmd/orch-shim
	CGO_ENABLED=0 $(GO) build -trimpath -o $(dir $(BIN))orch-hook ./cmd/orch-hook

# Integration tests use a real Redis when ORCH_TEST_REDIS_URL is set (.ci/run starts one) and miniredis always.
# cmd/orch runs beside the other packages, with -cover: its tests run an orch built with coverage, and its TestMain
# merges what every orch process covered with the in-process tests' counters into one line, kept in
# $(COVERDIR)/cmd-orch.txt with a profile for go tool cover -html=$(COVERDIR)/cmd-orch.cover. (go test's own
# "coverage:" figure for cmd/orch counts the in-process tests alone.) Last, the brain's scores on every labelled set.
COVERDIR ?= bin/cover
CLI      := github.com/orchrun/orch/cmd/orch
TESTFLAGS = -race -count=1 -timeout 20m
test:
	@mkdir -p $(COVERDIR) && rm -f $(COVERDIR)/cmd-orch.txt
	@pkgs=$$($(GO) list $(PKGS)) || exit 1; pid=; status=0; \
	  if echo "$$pkgs" | grep -qx '$(CLI)'; then \
	    echo "$(GO) test $(TESTFLAGS) -cover $(CLI) &"; \
	    ORCH_TEST_COVERDIR=$(abspath $(COVERDIR)) $(GO) test $(TESTFLAGS) -cover $(CLI) & pid=$$!; \
	  fi; \
	  others=$$(echo "$$pkgs" | grep -vx '$(CLI)'); \
	  if [ -n "$$others" ]; then \
	    echo "$(GO) test $(TESTFLAGS) <the other packages>"; \
	    $(GO) test $(TESTFLAGS) $$others || status=1; \
	  fi; \
	  if [ -n "$$pid" ]; then wait $$pid || status=1; cat $(COVERDIR)/cmd-orch.txt 2>/dev/null; fi; \
	  if echo "$$pkgs" | grep -qx 'github.com/orchrun/orch/brain'; then \
	    echo "the brain's scores on every labelled set (TestEval; each floor only moves up):"; \
	    $(GO) test -count=1 -run '^TestEval$$' -v ./brain 2>&1 | sed -n '/summary (/,/^--- /p' | grep -v -e '^--- ' -e 'summary (' | cut -c9-; \
	  fi; \
	  exit $$status

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) $(PKGS)

demo:
	$(GO) run ./cmd/orch run --agent sim examples/plans/ambiguous_task.md

# The benchmark suite (bench/): real Redis on loopback; writes bench/results.json and the README's bench table.
bench:
	$(GO) run ./bench

# The same with small counts, in under a minute, into a scratch directory: the committed results and README stay as
# they are. CI runs it to check that every measurement works; it never judges the times.
bench-quick:
	@tmp=$$(mktemp -d) && cp README.md "$$tmp/README.md" && \
	  $(GO) run ./bench -quick -out "$$tmp/results.json" -readme "$$tmp/README.md"; \
	  status=$$?; rm -rf "$$tmp"; exit $$status

# The Go micro-benchmarks of the packages.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 $(PKGS)

# Score a brain backend on the labelled corpora: accuracy, per-class recall/precision, confusion matrices.
# ORCH_EVAL_BACKEND selects the backend (default heuristic); see brain/testdata/eval/README.md.
.PHONY: eval
eval:
	$(GO) test -count=1 -run '^TestEval' -v ./brain

# Short fuzzing of every fuzz target (seeds run in `make test` anyway).
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 20s $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin

# Validate deploy/ offline (compose, Kubernetes manifests, Prometheus config): a Go module of its own, deploy/check.
.PHONY: deploy-check
deploy-check:
	cd deploy/check && $(GO) test -count=1 ./...
