# `make test` and `make eval` set themselves up: the first run creates .venv, installs
# everything and compiles ranx's scoring (~4-5 min on 2 cores); later runs reinstall only when
# pyproject.toml changed.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PEERS_STAMP := $(VENV)/.peers-installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: analyzers setup test soak eval eval-quick scale scale100k compaction bench judging-bench notebooks clean soak-runtime

setup: $(STAMP)

$(STAMP): pyproject.toml
	# A real browser for the widget tests: Debian's chromium (Playwright's own download needs a
	# network this machine does not have), and CJK fonts so Chinese text renders, not boxes.
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium fonts-noto-cjk)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: pip then takes the local CPU wheel instead of a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all]'
	# numba compiles ranx's scoring into the venv's cache once, here, not in the first sweep (~80 s)
	$(PY) -c 'from powercontext.eval.scoring import metrics; metrics.compile_ranx()'
	touch $(STAMP)

# Two workers (pytest-xdist), one per core: serially the suite took 16-19 min here, most
# of it single-threaded Python. --dist loadfile keeps each file on one worker, so a
# notebook's cells run in order in one kernel, and each worker starts its own seekdb
# (the session fixture). `$(PY) -m pytest tests/x.py` still runs serially.
# --no-loadscope-reorder: files go out longest first, as tests/conftest.py orders them
# (LONGEST_FIRST), not most-tests first, so no long file is left alone at the end.
# The real-browser widget tests (tests/browser, ~35 s) run after, in a process of their own, so
# their JupyterLab server and chromium never share a worker with the suite's load.
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --ignore=tests/browser
	$(PY) -m pytest tests/browser

# Runtime crash loops beyond `make test`: 25 SIGKILLs per storage profile between the
# Memory commit and the cursor save, each followed by a replay in a new process; and 25
# SIGKILLs of a capturing, flushing process (no acknowledged capture lost or doubled).
soak-runtime: $(STAMP)
	RUNTIME_KILLS=25 CAPTURE_KILLS=25 $(PY) -m pytest tests/runtime/test_restart_replay.py \
		tests/runtime/test_capture_crash_loop.py -s -q

# The reliability loops at length (issue 13): 100 SIGKILLs of a child writer per
# database and 2,000 fuzz examples per database, instead of make test's 5 and 120; and
# the hostile-argument calls of every public entry point (issue 35), 200 per entry point
# instead of 20 (~20 min). And (issue 43) the embedding migration against a real second process:
# 10 commits inside the migration's write transaction per database and mode instead of 1, and
# 3 migrations under a writer committing every 2.5 s (the issue's probe) instead of 1 at 0.5 s;
# two real sweeps sharing one seekdb store, the first to finish while the second is paused,
# 5 rounds, plus a SIGKILLed sweep cleaned up.
soak: $(STAMP)
	PC_CRASH_KILLS=100 PC_FUZZ_EXAMPLES=2000 PC_ENTRY_FUZZ_EXAMPLES=200 $(PY) -m pytest -q -s \
		tests/reliability/test_crash_loop.py tests/reliability/test_fuzz.py tests/reliability/test_entry_points.py
	PC_MIGRATION_RACES=10 PC_MIGRATION_WRITER_TRIES=3 PC_MIGRATION_WRITER_PERIOD=2.5 $(PY) -m pytest -q -s \
		tests/conformance/test_migration_race.py
	PC_STORE_ROUNDS=5 $(PY) -m pytest -q -s tests/eval/test_shared_store.py

# Both bundled embedding models, each swept on its own (results/<run>/minilm, …/e5) and compared
# side by side (results/<run>/embeddings.md).
eval: $(STAMP)
	$(PY) -m powercontext.eval sweep --all --embeddings minilm,e5

# The quick path: MiniLM on SQLite over three of the bundled corpora (sweep --quick),
# ~40 s instead of make eval's ~5 minutes (idle); the same run folder and report.
eval-quick: $(STAMP)
	$(PY) -m powercontext.eval sweep --quick

# Analyzer v1 (no stemming) and v2 (Snowball English stemming) swept side by side on the
# bundled corpora, both databases: results/analyzers/analyzers.md (reports/thresholds/analyzers.md).
analyzers: $(STAMP)
	$(PY) -m powercontext.eval analyzers --all --out results/analyzers

# A LoCoMo-sized corpus (6,000 entries, 500 queries) imported and swept on both databases; prints
# wall time, peak memory and per-stage times (benchmarks/scale_bench.py). Not part of `make test`.
scale: $(STAMP)
	$(PY) benchmarks/scale_bench.py

# Performance figures (issue 15): search overhead over its raw SQL, append cost and storage per
# Revision, changes(), revision-cache memory and size limits on both databases
# (benchmarks/perf_bench.py; BENCH_SIZES=1000,10000,100000 for the large run), then the
# hybrid search at 1k split into its parts (benchmarks/search_parts_bench.py), then the
# sweep-vs-retrieval cost (benchmarks/sweep_bench.py), then what the opt-in search log
# costs a search at 1k and 10k entries (benchmarks/search_log_bench.py, issue 44), then what
# admission in probability units adds per query at 1k (benchmarks/calibration_bench.py, issue 46), then one
# remember() of 10k and 50k entries with vectors given on both databases
# (benchmarks/load_bench.py, issue 48), then this project beside sqlite-vec + FTS5, LanceDB,
# Qdrant local and Chroma at 10k (this project on SQLite and on a seekdb of its own), seeded
# and real MiniLM vectors, one process per system
# (benchmarks/peers_bench.py, issue 48). 50k is `make bench PEERS_SIZES=10000,50000`: the
# first MiniLM run at 50k embeds 50k texts (over an hour on 2 cores; at 10k ~20 min), cached
# in ~/.cache/powercontext/bench-vectors/peers-minilm for later runs. Prints figures,
# asserts nothing; the latest table is kept in reports/performance.md.
PEERS_SIZES ?= 10000
bench: $(STAMP) $(PEERS_STAMP)
	$(PY) benchmarks/perf_bench.py --profile --explain
	$(PY) benchmarks/search_parts_bench.py
	$(PY) benchmarks/sweep_bench.py
	$(PY) benchmarks/search_log_bench.py
	$(PY) benchmarks/calibration_bench.py
	$(PY) benchmarks/load_bench.py
	$(PY) benchmarks/peers_bench.py --sizes $(PEERS_SIZES) --vectors seeded,minilm

# The stores benchmarks/peers_bench.py compares with (issue 48): the `peers` extra, installed
# by `make bench` itself (its own stamp), never by `make test` (not part of `all`).
$(PEERS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e '.[peers]'
	touch $(PEERS_STAMP)

# The researcher's loop (issue 44): what the judging order saves (benchmarks/judging_order.py,
# ~4 min) and the whole loop timed step by step, each step a new process as from a shell
# (benchmarks/judging_loop.py, ~8 min). Not part of `make bench`.
judging-bench: $(STAMP)
	$(PY) benchmarks/judging_order.py
	$(PY) benchmarks/judging_loop.py

# A 100,000-entry Memory on both databases (issue 15): one remember() of 100k entries with
# (seeded) vectors, then every public MemoryService operation on it, each reported as ok /
# typed error / raw error with its seconds and the peak RSS of this process and of seekdb
# (benchmarks/scale100k_bench.py). Not part of `make test` or `make bench`: about an hour on
# 2 cores (OceanBase ~40 min). SCALE_N=20000 for a shorter run.
scale100k: $(STAMP)
	$(PY) benchmarks/scale100k_bench.py

# OceanBase search on a freshly loaded 10k Memory, then after a minor and a major freeze
# (benchmarks/compaction_bench.py; OCEANBASE_NOTES.md "Compaction"). ~3 minutes; not part
# of `make bench`, whose figures are the fresh state.
compaction: $(STAMP)
	$(PY) benchmarks/compaction_bench.py

# Re-execute the tutorial notebooks in place (outputs stored) after a deliberate change;
# `make test` then checks them with strict nbval. No timing metadata, so reruns diff cleanly.
# The widgets' state is stored in the notebook's metadata, so GitHub, nbviewer and
# `nbconvert --to html` draw them without a kernel. Only some: make notebooks NOTEBOOKS=notebooks/02*.ipynb
# (`$(PY) -m nbconvert`, not the jupyter scripts: a copied venv's scripts keep the original
# venv's shebang, and its kernel would import that checkout's library)
NOTEBOOKS ?= notebooks/[0-9]*.ipynb
notebooks: $(STAMP)
	$(PY) -m nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.timeout=600 \
		--ExecutePreprocessor.record_timing=False --ExecutePreprocessor.store_widget_state=True $(NOTEBOOKS)
	$(PY) notebooks/jupyterlab_form.py $(NOTEBOOKS)  # as JupyterLab saves them: a user's run is no diff

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis results
