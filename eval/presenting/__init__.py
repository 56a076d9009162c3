"""Presenting: the run folder (the tables it holds, TREC files, report.html and its verdict, plots),
the console summary, and the side-by-side runs (analyzers, embedding models)."""
