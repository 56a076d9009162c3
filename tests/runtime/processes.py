"""Child processes for the kill tests: ``spawn(mode, *args)`` runs ``python -m
tests.runtime.child MODE ARGS…`` from the project root; ``read`` waits for one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120


def spawn(mode: str, *args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.runtime.child", mode, *map(str, args)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )


def read(proc: subprocess.Popen, prefix: str) -> str:
    """The rest of the child's next line, which must start with ``prefix``."""
    line = proc.stdout.readline()
    if not line.startswith(prefix):
        proc.kill()
        _, err = proc.communicate(timeout=TIMEOUT)
        raise AssertionError(f"child printed {line!r} instead of {prefix}…; stderr:\n{err[-3000:]}")
    return line.strip()[len(prefix):].strip()
