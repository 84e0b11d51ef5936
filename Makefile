# The verbs of the project. `make test` is what CI runs.
CARGO ?= cargo
## Runs a recipe line as a named stage: timed into $(CI_STAGES) when CI
## sets it (.ci/run prints the table at its end), else just run.
STAGE := scripts/stage.sh
## Seconds each fuzz target runs in `make fuzz` (`make test` replays the
## kept corpus in the ordinary test build instead: see docs/fuzzing.md).
FUZZ_SECS ?= 600

.PHONY: build test test-e2e test-rest lint run up schemas bench helm helm-sync fuzz image chaos mcp-servers chat-ui schemathesis

build:
	$(CARGO) build --release

## Starts RabbitMQ and Redis if needed, installs the MCP servers and
## prepares the Agent Chat UI (and chromium) the end-to-end tests run,
## builds every test, then runs two lanes at once: the end-to-end binary
## (embedded and distributed modes), and beside it every other test
## (unit, conformance, chaos, the image, every fuzz target over its kept
## corpus), the promtool checks of alerts and dashboards, the chart's
## checks and a short schemathesis run against the served OpenAPI
## description. Most of the end-to-end binary's time is spent waiting on
## servers and processes, so the second lane mostly fills idle cores.
## `--workspace` everywhere: every step resolves the features the build
## did, so none compiles anything again.
test: up mcp-servers chat-ui
	$(STAGE) build $(CARGO) test --workspace --all-targets --no-run
	$(STAGE) build-e2e $(CARGO) test --workspace --test e2e --no-run
	$(MAKE) --no-print-directory -j2 --output-sync=target test-e2e test-rest

test-e2e:
	$(STAGE) e2e $(CARGO) test --workspace --test e2e

test-rest:
	$(STAGE) tests $(CARGO) test --workspace --all-targets
	$(STAGE) observability env CARGO=$(CARGO) scripts/check-observability.sh
	$(STAGE) helm scripts/helm.sh
	$(STAGE) schemathesis env CARGO=$(CARGO) scripts/schemathesis.sh short

## A long schemathesis run (stateless and stateful phases, many examples
## per operation) against `deepfleet dev`'s /openapi.json; its outcome is
## written to docs/schemathesis.md.
schemathesis:
	CARGO=$(CARGO) scripts/schemathesis.sh long

## Runs each fuzz target of fuzz/ for FUZZ_SECS seconds, one after the
## other, and merges what adds coverage into fuzz/corpus/ (see
## docs/fuzzing.md).
fuzz:
	FUZZ_SECS=$(FUZZ_SECS) FUZZ_MERGE=1 CARGO=$(CARGO) scripts/fuzz.sh

## A 1,000-run distributed batch with subagents through SIGKILLed
## workers, a RabbitMQ restart, a Redis restart and a worker frozen past
## the consumer timeout, on private servers; `make test` runs a shorter
## one (see RELIABILITY.md).
chaos:
	CHAOS_RUNS=1000 $(CARGO) test --test chaos -- --nocapture

## Lints the Helm chart strictly, renders it with every value set of
## helm/deepfleet/ci (and the defaults), validates the manifests against
## several Kubernetes versions, refuses the broken values of
## helm/tests/broken, and lints deploy/Dockerfile and deploy/compose.yaml.
helm:
	scripts/helm.sh

## Builds the image deepfleet:VERSION with podman and no registry: the
## release binary on a base assembled from this machine (scripts/image.sh).
image:
	CARGO=$(CARGO) scripts/image.sh

## Rewrites the chart's copies of deploy/prometheus/alerts.yml,
## deploy/grafana/*.json and the agent spec schema, and its README's values
## table, after a change to their sources.
helm-sync:
	scripts/helm.sh sync

## rustfmt and clippy over the workspace (the fuzz crate's targets are one
## line each, held to it by deepfleet-fuzzing's tests), then the checks of
## the project's shape and their self-tests.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml --check
	$(STAGE) clippy $(CARGO) clippy --workspace --all-targets -- -D warnings
	$(STAGE) clippy-e2e $(CARGO) clippy --workspace --test e2e -- -D warnings
	scripts/test_check_import_loops.py
	scripts/check-import-loops.py
	scripts/test_check_architecture.py
	scripts/test_stage_report.py
	CARGO=$(CARGO) scripts/check-architecture.py

## The example batch, embedded mode.
run:
	$(CARGO) run --release -- run examples/briefings/tasks.jsonl --agent examples/briefings/agent.yaml

up:
	$(STAGE) services scripts/services.sh

## Installs the pinned MCP servers of tests/e2e/mcp.rs from the npm
## registry into .mcp-servers/ (needs node and npm; fatal under CI=true).
mcp-servers:
	$(STAGE) mcp-servers scripts/mcp-servers.sh

## Installs chromium (apt-get, as root) and scaffolds and builds the
## pinned Agent Chat UI of tests/e2e/chat_ui.rs into target/chat-ui (needs
## node and npm; fatal under CI=true).
chat-ui:
	$(STAGE) chat-ui scripts/chat-ui.sh

## Regenerates proto/schema/*.json after a change to the wire types.
schemas:
	UPDATE_SCHEMAS=1 $(CARGO) test -p deepfleet-proto schema

## Regenerates BENCHMARKS.md and docs/bench/*.png (release builds, a venv
## with deepagents for the comparison; about 10 minutes on 2 cores).
bench: up
	CARGO=$(CARGO) scripts/bench.sh
