"""The threshold-evaluation harness (installed as ``powercontext.eval``).

Modules, one concern each:

* ``datasets`` / ``datasheet`` — load and validate labelled corpora (errors vs bundled-style notes).
* ``splits`` — seeded stratified dev/test splits and k folds by query.
* ``importers`` — LoCoMo-10, LongMemEval, BEIR and TREC collections → corpora in our format.
* ``loader`` — write a corpus into a fresh database through the public ``MemoryService``.
* ``embedcache`` — ``CachingEmbedding``: every text embedded once per profile, on disk.
* ``retrieval`` — ``svc.retrieve`` once per query × backend × mode; the candidate cache.
* ``collect`` — the database/model half of a run: embed, load, retrieve, spot-check.
* ``sweep`` — ``Grid`` and ``Replay``: ``admission.admit`` + ``rrf`` replayed as arrays.
* ``metrics`` — ranx-equal ranking metrics, set and abstention metrics, CIs, tests.
* ``recommend`` — the policy per mode (and the joint library default) by a stated objective.
* ``tables`` — per-query, summary, breakdown, paired-test and abstention tables of the named policies.
* ``crossval`` — the k-fold cross-validated recommendation of small corpora (held-out mean ± spread).
* ``compare`` — SQLite vs OceanBase, query by query; vector recall vs exact search.
* ``abstention`` — MTEB-style nAUC of the retrieval signals.
* ``report`` / ``runfiles`` — the run folder: CSV tables, summary.json, report.html, TREC run files + qrels.
* ``progress`` — tqdm.auto bars that stay quiet when the output is not a terminal.
* ``harness`` — the Python API (``sweep``, ``summary``, ``run``, ``analyse``), DataFrames out.
* ``judging`` — from an agent's own memory to a judged corpus: ``pool`` (snapshot + pooled candidates), ``export``.
* ``__main__`` — ``python -m powercontext.eval sweep|run|validate|import|pool|export``.
"""
