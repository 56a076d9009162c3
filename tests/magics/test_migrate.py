"""``%pcmem migrate --embedding e5``: the open database moves to another model, and
``%pcmem open --embedding e5`` searches with E5's own default policy."""

from __future__ import annotations

from powercontext.bundled import E5_PROFILE, MINILM_PROFILE
from powercontext.magics import current_magics, current_service
from powercontext.memory.admission import AdmissionPolicy

from .helpers import fail, run


def test_open_with_e5_uses_e5s_default_and_migrate_moves_the_database(shell, sqlite_target, capsys):
    shell.run_line_magic("config", "PcMem.policy_file = ''")  # no pinned policy: each profile's own default
    run(shell, f"%pcmem open {sqlite_target} --embedding minilm")
    assert current_service(shell).policy == AdmissionPolicy.default_for(MINILM_PROFILE)
    run(shell, '%pcmem remember --kind fact "部署前先运行 make check。"')
    run(shell, '%pcmem remember --kind fact "Release builds are signed with the hardware key."')
    capsys.readouterr()
    report = run(shell, "%pcmem migrate --embedding e5 -o moved")
    out = capsys.readouterr().out
    assert shell.user_ns["moved"] is report and report.entries == 2 and report.rows_written == 2
    assert f"{MINILM_PROFILE.profile_id} → {E5_PROFILE.profile_id}: 2 entries in 1 Memories" in out
    svc = current_service(shell)
    assert svc.backend.embedding_profile == E5_PROFILE
    assert svc.policy == AdmissionPolicy.default_for(E5_PROFILE)
    assert current_magics(shell).session.open_line == f"%pcmem open {sqlite_target} --embedding e5"
    frame = run(shell, '%pcmem search "how are release builds signed" --mode hybrid')
    assert "hardware key" in frame.text.iloc[0]
    assert "unknown embedding" in fail(shell, capsys, "%pcmem migrate --embedding nonexistent-model")
    assert "--embedding" in fail(shell, capsys, "%pcmem migrate")
    run(shell, "%pcmem close")
    run(shell, f"%pcmem open {sqlite_target} --embedding e5")
    assert current_service(shell).policy == AdmissionPolicy.default_for(E5_PROFILE)
    assert "holds vectors of embedding profile" in fail(shell, capsys, f"%pcmem open {sqlite_target} --embedding minilm")
    run(shell, "%pcmem close")
