"""Presenting: the run folder (its tables on disk, TREC files, report.html and its verdict, plots),
the console summary and progress lines, and the side-by-side runs (analyzers, embedding models)."""
