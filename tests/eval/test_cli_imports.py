"""What ``python -m powercontext.eval`` costs to start. Every sweep, cleanup and validate
is a process of its own (the shared-store tests start nine), and a full-text sweep needs
no model: scikit-learn (κ of two judges, the calibration fits) took ~4 s of each start
when the judging door imported it eagerly, so it is imported where it is used."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("sklearn", "scipy.stats", "torch", "transformers", "sentence_transformers")


def test_the_cli_starts_without_a_model_or_scikit_learn():
    probe = ("import json, sys, powercontext.eval.__main__ as cli; cli.build_parser(); "
             f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []
