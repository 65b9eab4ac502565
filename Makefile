# Chronicle — the two commands a fresh machine needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/chronicle
DATA    ?= ./data
# HTTP and KAFKA: where make run serves the API and the embedded broker
# listens (make run HTTP=127.0.0.1:8081 KAFKA=127.0.0.1:9093 when the
# defaults are taken)
HTTP    ?= 127.0.0.1:8080
KAFKA   ?= 127.0.0.1:9092
# VERSION: what chronicle --version prints (empty: the module version and VCS revision of the build)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)

.PHONY: run test build bench demo clean weaviate fuzz cluster-soak

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/chronicle

## run: the demo on the bundled tau-bench sessions, then keep serving the HTTP API on 127.0.0.1:8080
run: build
	$(BIN) demo --data $(DATA) --serve --http $(HTTP) --kafka-listen $(KAFKA)

## demo: the demo alone, summary as JSON
demo: build
	$(BIN) demo --data $(DATA) --json --kafka-listen $(KAFKA)

## test: vet, then every test with the race detector (includes the crash test and, with the
## Weaviate server installed by `make weaviate`, the Weaviate integration tests), then the
## tuning-choice evaluations the race build skips (NORACE_TESTS: single-threaded computations the
## detector slows tenfold, 335 s against 18 s)
NORACE_TESTS ?= ^(TestContextLevelChoice|TestEvaluationAblations|TestWordsChoice|TestWordsWeightingChoice)$$
test: weaviate
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 40m ./...
	$(GO) test -count=1 -timeout 10m -run '$(NORACE_TESTS)' ./processors/toolgraph/

## bench: one run of every benchmark, each side by side with its baseline
bench: build
	$(BIN) bench
	$(GO) test -run '^$$' -bench PerEventCost -benchtime 1x -count 1 -timeout 20m ./processors/bench/
	$(GO) test -run '^$$' -bench . -benchtime 2000x -count 1 ./processors/distill/
	$(GO) test -run '^$$' -bench ContentHash -count 1 ./projections/
	$(GO) test -run '^$$' -bench ConfidenceUpdates -benchtime 20000x -count 1 ./processors/memories/
	$(GO) test -run '^$$' -bench . -count 1 ./processors/toolgraph/
	$(GO) test -run '^$$' -bench MemorySearch -benchtime 100x -count 1 -timeout 20m ./processors/memories/
	$(GO) test -run '^$$' -bench USELite -count 1 ./projections/embedder/
	$(GO) test -run '^$$' -bench . -benchtime 2000x -count 1 ./processors/workflows/
	$(GO) test -run '^$$' -bench NodeExpansion -benchtime 1000x -count 1 ./processors/treesearch/

## cluster-soak: the long fault-injection suite (3 serve processes and the broker on loopback, scale
## 1 → 3 → 1 during a 20,000-event import, 5 SIGKILLs, one SIGSTOP); CHRONICLE_FAULT_SEED=N replays a schedule
cluster-soak:
	CHRONICLE_CLUSTER_SOAK=1 $(GO) test -run '^TestClusterSoak$$' -count=1 -v -timeout 30m ./cmd/chronicle/

## fuzz: each Go fuzz target for FUZZTIME (default 1m); `make test` runs only their seed corpora. Then MUTATIONS
## (default 150) mutated requests per operation of openapi.json, seeds 1 to 3 (`make test` runs 6, seed 1)
FUZZTIME ?= 1m
MUTATIONS ?= 150
fuzz:
	for s in 1 2 3; do CHRONICLE_MUTATIONS=$(MUTATIONS) CHRONICLE_MUTATION_SEED=$$s $(GO) test -count=1 -run '^TestMutatedRequestsAreAnsweredAsDescribed$$' ./cmd/chronicle/httpapi/ || exit 1; done
	$(GO) test -run '^$$' -fuzz '^FuzzParseProducerEvent$$' -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz '^FuzzFastParseAgrees$$' -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz '^FuzzDataStringAgrees$$' -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz '^FuzzCompactAsEncodingJSON$$' -fuzztime $(FUZZTIME) ./projections/
	$(GO) test -run '^$$' -fuzz '^FuzzBinaryModeRecord$$' -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz '^FuzzPayloadDecoders$$' -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz '^FuzzSplitBody$$' -fuzztime $(FUZZTIME) ./cmd/chronicle/httpapi/
	$(GO) test -run '^$$' -fuzz '^FuzzBatchSplitsAgree$$' -fuzztime $(FUZZTIME) -parallel 1 ./processors/processortest/

## weaviate: install the Weaviate server the projections/search/weaviate tests start (from the Go module proxy, about 7 min on 2 cores, a 169 MB binary; skipped when present)
WEAVIATE_VERSION ?= v1.35.2
WEAVIATE_SERVER  ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)/weaviate-server
weaviate:
	@if [ -x "$(WEAVIATE_SERVER)" ]; then echo "weaviate-server: $(WEAVIATE_SERVER)"; else \
		echo "installing weaviate-server $(WEAVIATE_VERSION) into $(dir $(WEAVIATE_SERVER))"; \
		cd /tmp && GOFLAGS=-mod=mod $(GO) install github.com/weaviate/weaviate/cmd/weaviate-server@$(WEAVIATE_VERSION); fi

clean:
	rm -rf bin $(DATA)
