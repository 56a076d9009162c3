"""``%pcmem verify REF``: the whole history checked, one row per mismatch."""

from __future__ import annotations

from powercontext.magics import current_runner, current_service

from ..support import sql
from .helpers import fail, run


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


def test_maintain_prints_what_it_did_and_stores_the_report_with_o(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    run(shell, '%pcmem remember --kind fact "the build cache lives in ~/.cache/atlas"')
    capsys.readouterr()
    assert run(shell, "%pcmem maintain --settle 0") is None
    out = capsys.readouterr().out
    assert "maintenance of the sqlite database" in out and "full-text index segments merged" in out
    report = run(shell, "%pcmem maintain --settle 0 -o report")
    assert shell.user_ns["report"] is report and report.database == "sqlite" and report.probe_ms_after > 0
    assert "timeout" in fail(shell, capsys, "%pcmem maintain --timeout -5")
    run(shell, "%pcmem close")
