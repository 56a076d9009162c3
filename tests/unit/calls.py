"""A count of Python-level function calls, for the tests that pin a fast path by how
much Python it runs (a count, not a time: the machine's load cannot move it)."""

from __future__ import annotations

import sys
from typing import Any, Callable


def python_calls(fn: Callable[..., Any], *args: Any) -> int:
    """How many Python-level function calls ``fn(*args)`` makes."""
    count = 0

    def hook(frame, event, arg):
        nonlocal count
        count += event == "call"
    sys.setprofile(hook)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return count
