# Two commands for a fresh machine: `make plan` and `make test`. Both create .venv when missing and
# install requirements.lock (exact versions, hash-checked), the one lock local runs, CI, the
# workflows and Pulumi's own install (infra/requirements.txt) share.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STACK  ?= dev

REF    ?= origin/main

# Every variable a rule's target or prerequisites name is defined here, above the rules: make expands those
# when it reads the rule, so a variable defined later is empty there (tests/test_install.py checks it).
# The upstream JobSet, Kueue and LWS CRDs the admission checks read and their charts plan and render expand, from
# the Go modules of the versions the stack installs (hash-checked by tools/engines/*/go.sum; needs Go, not a build).
CRDS := build/crds/.stamp
# The pinned vLLM TPU and tpu-inference wheels, unpacked for tests/test_vllm_sources.py to read (hash-locked).
SERVING_SOURCES := build/serving-sources/.installed
# Google's Shared Pathways Service client (pathwaysutils), a test peer of the e2e tier, in its own venv.
CLIENT_VENV := build/client-venv
# The researcher's client (pyproject.toml: `pathways-run`), installed as a researcher installs it: its own venv,
# its hash-locked dependencies (tools/client/requirements.lock) and the package, nothing of the infrastructure's.
RUN_CLIENT_VENV := build/run-client
# xpk, the peer `make bench` times the plan against, pinned and hash-locked, in its own venv (never on PATH).
XPK_VENV := build/xpk-venv

.PHONY: client run-client plan plan-bootstrap notebook-lock diff render test bench bench-real superpod fuzz mutation lock clean toolchain e2e crds client-venv serving-sources help

# uv (pinned, hash-checked in requirements-bootstrap.txt) installs the lock; --compile-bytecode because
# Python may not write bytecode at import (PYTHONDONTWRITEBYTECODE), and a plan imports ~1,000 SDK modules.
$(VENV)/.installed: requirements.lock requirements-bootstrap.txt
	@echo "==> setting up $(VENV) from requirements.lock (first run only; about 30 s)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-bootstrap.txt
	$(VENV)/bin/uv pip install --python $(PY) --require-hashes --compile-bytecode -r requirements.lock
	touch $@
	@echo "==> $(VENV) ready"

# The plan's policy run sees the controllers' charts expanded (build/charts, which `make crds` copies).
plan: $(VENV)/.installed $(CRDS)
	$(PY) -m infra.offline plan --stack $(STACK)

# The bootstrap of one project (bootstrap/Pulumi.<PROJECT>.yaml), offline: its resources, grants and policy verdict.
PROJECT ?=
plan-bootstrap: $(VENV)/.installed $(CRDS)
	@test -n "$(PROJECT)" || { echo "make plan-bootstrap PROJECT=<project id> (bootstrap/Pulumi.<project>.yaml)" >&2; exit 2; }
	$(PY) -m infra.offline plan-bootstrap --project $(PROJECT)

# What this branch's stack file changes against REF: replacements, deletions, what they interrupt.
diff: $(VENV)/.installed
	$(PY) -m infra.offline diff --stack $(STACK) --against $(REF)

# The upstream CRDs and charts from the controllers' Go modules (a `go mod download`, hash-checked by go.sum).
$(CRDS): tools/engines/control-plane/go.sum tools/engines/gke-crds/go.sum tools/engines/gcp-apis/go.sum $(wildcard tools/engines/versions/*/go.sum) $(wildcard tools/engines/gke-crds/*.yaml) tools/engines/crds.py
	$(PYTHON) tools/engines/crds.py
crds: $(CRDS)

render: $(VENV)/.installed $(CRDS)
	$(PY) -m infra.offline render --stack $(STACK) --out build/render/$(STACK)

$(SERVING_SOURCES): tools/serving/sources.lock $(VENV)/.installed
	@echo "==> unpacking the pinned vllm-tpu and tpu-inference wheels into build/serving-sources (first run only; about 10 s)"
	rm -rf build/serving-sources
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes --only-binary=:all: \
	  --python-version 3.12 --implementation cp --abi cp312 --platform manylinux_2_24_x86_64 \
	  --target build/serving-sources -r tools/serving/sources.lock
	touch $@

serving-sources: $(SERVING_SOURCES)

test: $(VENV)/.installed $(CRDS) $(SERVING_SOURCES)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/basedpyright
	$(PY) -m pytest -q -n 2

# The real engines (Kubernetes control plane, JobSet, Kueue, LWS, the Pulumi CLI and its Kubernetes
# provider), built from the pinned Go modules in tools/engines; cached, so a second run does nothing.
toolchain:
	$(PYTHON) tools/engines/build.py

$(CLIENT_VENV)/.installed: tools/cluster/client-requirements.lock
	@echo "==> setting up $(CLIENT_VENV) (pathwaysutils and its JAX; first run only, about 45 s)"
	test -x $(CLIENT_VENV)/bin/python || $(PYTHON) -m venv $(CLIENT_VENV)
	$(CLIENT_VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes -r tools/cluster/client-requirements.lock
	touch $@

$(XPK_VENV)/.installed: tools/xpk/requirements.lock $(VENV)/.installed
	@echo "==> setting up $(XPK_VENV) (xpk, for make bench; first run only)"
	test -x $(XPK_VENV)/bin/python || $(PYTHON) -m venv $(XPK_VENV)
	$(VENV)/bin/uv pip install --python $(XPK_VENV)/bin/python --require-hashes --compile-bytecode -r tools/xpk/requirements.lock
	touch $@

client-venv: $(CLIENT_VENV)/.installed

# The real-engine tier: the stacks' Kubernetes layer on a local control plane (tests_e2e/).
e2e: toolchain $(VENV)/.installed $(CLIENT_VENV)/.installed $(CRDS) run-client
	$(PY) -m tools.cluster.offline -- $(PY) -m pytest -q -p no:cacheprovider --durations=20 tests_e2e

bench: $(VENV)/.installed $(XPK_VENV)/.installed
	$(PY) -m tools.bench

# A whole Ironwood superpod (144 cubes, 2,304 nodes) on the real engines: a benchmark, not a tier scenario (#79.3).
superpod: toolchain $(VENV)/.installed $(CRDS)
	$(PY) -m tools.cluster.offline -- $(PY) -m tools.superpod

# Generated stacks aimed at #76's refusal rules: per rule, the smallest that trips it and a near miss that plans OK.
fuzz: $(VENV)/.installed
	$(PY) -m tools.rule_fuzz

# The real `pulumi preview` (Kubernetes layer, local control plane): time, memory, where the time goes.
bench-real: toolchain $(VENV)/.installed
	$(PY) -m tools.bench_real

# Mutation testing (not part of `make test`): 8,951 mutants of model, manifests, critical_path and policies/rules
# today (python -m tools.mutation --list); the last full run, of 1,653, took 49 min on 2 cores. MODULE=components/model
# SAMPLE=<mutants per file, 0 = all> RERUN=build/mutation.json (its survivors, against the whole suite);
# results to build/mutation.json. Run before a release.
MODULE ?=
SAMPLE ?= 0
mutation: $(VENV)/.installed $(CRDS) $(SERVING_SOURCES)
	$(PY) -m tools.mutation $(if $(MODULE),--module $(MODULE)) $(if $(FIRST),--first $(FIRST)) \
		$(if $(RERUN),--rerun $(RERUN) --out build/mutation-rerun.json) --sample $(SAMPLE)

# Re-lock the notebook image's packages (infra/images/notebook, built by Cloud Build) after editing its requirements.in.
notebook-lock: $(VENV)/.installed
	$(VENV)/bin/uv pip compile infra/images/notebook/requirements.in --generate-hashes --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --custom-compile-command "make notebook-lock" --quiet -o infra/images/notebook/requirements.lock

# Re-resolve requirements.txt (ranges) into requirements.lock after editing it.
lock: $(VENV)/.installed
	$(VENV)/bin/uv pip compile requirements.txt --generate-hashes --universal --python-version 3.11 \
		--custom-compile-command "make lock" --quiet -o requirements.lock
	$(VENV)/bin/uv pip compile requirements-bootstrap.in --generate-hashes --universal --python-version 3.11 \
		--custom-compile-command "make lock" --quiet -o requirements-bootstrap.txt
	$(VENV)/bin/uv pip compile pyproject.toml --generate-hashes --universal --python-version 3.11 \
		--custom-compile-command "make lock" --quiet -o tools/client/requirements.lock
	$(VENV)/bin/uv pip compile tools/client/build-requirements.in --generate-hashes --universal --python-version 3.11 \
		--custom-compile-command "make lock" --quiet -o tools/client/build-requirements.lock
	$(VENV)/bin/uv pip compile tools/xpk/requirements.in --generate-hashes --universal --python-version 3.11 \
		--custom-compile-command "make lock" --quiet -o tools/xpk/requirements.lock

# The client from scratch, timed: a fresh venv, the locked dependencies, the package (docs/runs.md, "Day one").
client:
	rm -rf $(RUN_CLIENT_VENV)
	@start=$$(date +%s.%N); \
	$(PYTHON) -m venv $(RUN_CLIENT_VENV) && \
	$(RUN_CLIENT_VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes -r tools/client/requirements.lock && \
	$(RUN_CLIENT_VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes -r tools/client/build-requirements.lock && \
	$(RUN_CLIENT_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation . && \
	end=$$(date +%s.%N) && \
	echo "==> $(RUN_CLIENT_VENV): pathways-run installed in $$($(PYTHON) -c "print(round($$end - $$start, 1))") s, $$(du -sh $(RUN_CLIENT_VENV) | cut -f1) on disk" && \
	$(RUN_CLIENT_VENV)/bin/pathways-run --help | head -3
	rm -rf pathways_run.egg-info

# The researcher's client as installed (docs/runs.md, "Day one"), for the real-engine tier's day one: its locked
# dependencies once, the package from this checkout every time (so it is never older than the code it tests).
run-client:
	test -x $(RUN_CLIENT_VENV)/bin/pathways-run || $(MAKE) client
	$(RUN_CLIENT_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall .
	rm -rf pathways_run.egg-info

clean:
	rm -rf $(VENV) build .pytest_cache

help:
	@printf '%s\n' \
	  'make plan [STACK=dev]        offline plan of stacks/Pulumi.<STACK>.yaml (creates .venv from requirements.lock, fetches the charts on first use)' \
	  'make plan-bootstrap PROJECT=P  offline preview of bootstrap/Pulumi.<P>.yaml: its resources, grants and policy verdict' \
	  'make diff [STACK=] [REF=]    what the stack-file change creates, replaces or interrupts, against REF (origin/main)' \
	  'make render [STACK=dev]      the Kubernetes objects, admission-checked, into build/render/<STACK>' \
	  'make test                    ruff, basedpyright and the unit suite (fetches the upstream CRDs first)' \
	  'make crds                    the upstream JobSet, Kueue and LWS CRDs and charts from their pinned Go modules (needs Go)' \
	  'make toolchain               build the real engines from their pinned Go modules (cached)' \
	  'make client                  install the researcher'"'"'s client (pathways-run) as a researcher does, into build/run-client, timed' \
	  'make client-venv             the e2e tier'"'"'s own venv: Google'"'"'s pathwaysutils client and its JAX' \
	  'make run-client              the researcher'"'"'s client for the e2e tier'"'"'s day one: installed once, the package refreshed' \
	  'make serving-sources         the pinned vLLM TPU and tpu-inference wheels, unpacked for the tests to read' \
	  'make e2e                     the real-engine tier: the stacks on a local control plane, the real Pulumi CLI' \
	  'make bench                   plan time, memory and deploy-time estimates as the stack grows' \
	  'make fuzz                    per refusal rule of #76, the smallest generated stack that trips it and its near miss' \
	  'make bench-real              the real pulumi preview: time and memory beside the offline plan (needs Go)' \
	  'make superpod                a whole Ironwood superpod (144 cubes, 2,304 nodes) on the real engines: placement and admission times' \
	  'make mutation [MODULE=] [SAMPLE=] [RERUN=]  mutation testing (not in make test; a full run takes about an hour)' \
	  'make notebook-lock           re-lock the notebook image (infra/images/notebook) after editing its requirements.in' \
	  'make lock                    re-resolve requirements.lock after editing requirements.txt' \
	  'make clean                   remove .venv, build and the pytest cache' \
	  'make help                    this list'
