"""Progress bars for the slow steps of a run (embed, load, retrieve, sweep).

``tqdm.auto`` picks a notebook bar under Jupyter and a text bar in a terminal. When
the text goes to something that is not a terminal (a CI log, ``make eval | tee``),
every refresh would become a log line, so there a bar redraws at most every
``LOG_INTERVAL`` seconds — a few lines per step, never thousands.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["LOG_INTERVAL", "bar"]

LOG_INTERVAL = 30.0


def _tqdm_is_notebook(cls: type) -> bool:
    return cls.__module__.startswith("tqdm.notebook")


def bar(enabled: bool = True, **options: Any):
    """A ``tqdm.auto`` bar (disabled unless ``enabled``); options as for tqdm."""
    from tqdm.auto import tqdm

    if enabled and not _tqdm_is_notebook(tqdm):
        stream = options.get("file") or sys.stderr
        if not getattr(stream, "isatty", lambda: False)():
            options.setdefault("mininterval", LOG_INTERVAL)
            options.setdefault("maxinterval", LOG_INTERVAL * 4)
    return tqdm(disable=not enabled, **options)
