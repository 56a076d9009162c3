"""Running: everything that touches a database or a model — fresh databases and shared stores,
the embedding cache, loading a corpus, retrieving candidates (``collect``), other systems' run files."""
