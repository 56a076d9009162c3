"""``%pcmem verify REF``: the whole history checked, one row per mismatch."""

from __future__ import annotations

from powercontext.magics import current_runner, current_service

from ..support import sql
from .helpers import run


def test_verify_reports_ok_then_each_mismatch(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, '%pcmem remember --kind fact "the build cache lives in ~/.cache/atlas"')
    capsys.readouterr()
    frame = run(shell, f"%pcmem verify {rev.artifact_id[:-3]}")
    assert frame.empty and frame.attrs["ok"]
    assert "1 revisions, 1 versions, 0 sources checked — ok" in capsys.readouterr().out

    svc = current_service(shell)
    current_runner().run(sql(svc, "UPDATE memory_entry_versions SET text = 'forged'"))
    frame = run(shell, f"%pcmem verify {rev.artifact_id}")
    assert not frame.attrs["ok"] and len(frame) == 1 and "altered" in frame.issue[0]
    assert "1 mismatches" in capsys.readouterr().out
    run(shell, "%pcmem close")
