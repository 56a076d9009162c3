"""The threshold-evaluation harness (installed as ``powercontext.eval``).

Two doors at the top, and one sub-package per stage of a run:

* ``harness`` — the Python API (``sweep``, ``summary``, ``run``, ``analyse``, ``calibrate``), DataFrames out.
* ``__main__`` — ``python -m powercontext.eval sweep|run|validate|import|pool|export|calibrate|…``
  (``calibrate_cli``: its ``calibrate`` subcommand, a door's helper like ``__main__`` itself).
* ``corpora`` — the corpus format, validation and loading, splits and folds, datasheets, importers.
* ``running`` — databases, stores and the embedding cache; loading, retrieving, collecting; external runs.
* ``scoring`` — the replay over the grid, metrics, recommendation, cross-validation, transfer, peers, calibration.
* ``presenting`` — the run folder's tables and files, report.html, the verdict, plots, console, progress.
* ``judging`` — from an agent's own memory to a judged corpus: ``pool`` (snapshot + pooled candidates), ``export``.

Arrows point from the doors into the stages; no stage imports a door.
"""
