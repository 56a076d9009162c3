"""Helpers for driving the magics through an InteractiveShell."""

from __future__ import annotations

from IPython.core.error import UsageError


def run(ip, source: str):
    """Run a cell that must succeed; return its value."""
    result = ip.run_cell(source)
    if not result.success:
        raise AssertionError(f"cell failed: {source!r}: {result.error_in_exec or result.error_before_exec!r}")
    return result.result


def fail(ip, capsys, source: str) -> str:
    """Run a cell that must fail with a user error; return its one stderr line."""
    capsys.readouterr()
    result = ip.run_cell(source)
    out, err = capsys.readouterr()
    assert isinstance(result.error_in_exec, UsageError), (source, result.error_in_exec)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: "), err
    return lines[0]
