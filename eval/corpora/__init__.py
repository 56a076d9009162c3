"""Corpora: the labelled-corpus format and its records, validation and loading, dev/test
splits and folds, datasheet counts, and the importers of public benchmarks (``importers``)."""
