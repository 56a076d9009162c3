"""The threshold-evaluation harness (installed as ``powercontext.eval``).

Modules, one concern each:

* ``datasets`` / ``datasheet`` — load and validate the labelled corpora (``datasets/<corpus>/``).
* ``loader`` — write a corpus into a fresh database through the public ``MemoryService``.
* ``embedcache`` — ``CachingEmbedding``: every text embedded once per profile, on disk.
* ``retrieval`` — ``svc.retrieve`` once per query × backend × mode; the candidate cache.
* ``collect`` — the database/model half of a run: embed, load, retrieve, spot-check.
* ``sweep`` — ``Grid`` and ``Replay``: ``admission.admit`` + ``rrf`` replayed as arrays.
* ``metrics`` — ranx-equal ranking metrics, set and abstention metrics, CIs, tests.
* ``recommend`` — the policy per mode (and the joint library default) by a stated objective.
* ``compare`` — SQLite vs OceanBase, query by query; vector recall vs exact search.
* ``abstention`` — MTEB-style nAUC of the retrieval signals.
* ``report`` — the run folder: CSV tables, summary.json, report.html.
* ``harness`` — the Python API (``sweep``, ``summary``, ``run``, ``analyse``), DataFrames out.
* ``__main__`` — ``python -m powercontext.eval sweep|run``.
"""
