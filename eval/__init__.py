"""The threshold-evaluation harness (installed as ``powercontext.eval``).

Two doors at the top, and one sub-package per stage of a run:

* ``harness`` — the Python API (``sweep``, ``summary``, ``run``, ``analyse``, ``calibrate``), DataFrames out.
* ``__main__`` — ``python -m powercontext.eval sweep|run|validate|import|pool|export|calibrate|…``
  (``calibrate_cli``: its ``calibrate`` subcommand, a door's helper like ``__main__`` itself).
* ``corpora`` — the corpus format, validation and loading, splits and folds, datasheets, importers.
* ``running`` — databases, stores and the embedding cache; loading, retrieving, collecting; run files.
* ``scoring`` — the replay over the grid, metrics, recommendation, cross-validation, transfer, peers,
  external runs, calibration.
* ``presenting`` — the run folder's files, report.html, the verdict, plots, console.
* ``judging`` — from an agent's own memory to a judged corpus: ``pool`` (snapshot + pooled candidates), ``export``.

Beside them, four leaves every stage may import: ``errors`` (EvalError), ``private``
(owner-only files and folders), ``progress`` (the stage lines and bars) and ``runfolder``
(the run folder's tables on disk: running caches with it, scoring reads runs back through it).

Arrows point from the doors into the stages; no stage imports a door, and the stages lean one
way: corpora ← running ← scoring ← presenting, judging on corpora and running
(tests/unit/test_architecture.py checks it).
"""
