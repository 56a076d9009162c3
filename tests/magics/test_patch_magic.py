"""%pcmem patch: one unique fragment replaced, refusals as one line, and a patch row
in the lineage view."""

from .helpers import fail, run

PORT = "The dev server listens on port 5173 and proxies port 5173/api."


def test_patch_then_lineage_shows_the_patch_row(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, '%pcmem remember --kind fact "The dev server listens on port 5173."')
    entry = rev.changes[0].entry_id
    rev2 = run(shell, f'%pcmem patch {entry[:-1]} --old 5173 --new 51730 --reason "moved by vite" -o patched')
    assert shell.user_ns["patched"] is rev2 and rev2.revision == 2
    assert [(c.op, c.reason) for c in rev2.changes] == [("revise", "patch offset=31 length=4 delta=+1: moved by vite")]
    rev3 = run(shell, f'%pcmem patch {entry} --old "dev " --new ""')
    lineage = run(shell, f"%pcmem lineage {entry}")
    assert lineage[["revision", "op", "version", "reason"]].values.tolist() == [
        [1, "add", 1, ""],
        [2, "patch", 2, "at 31: 4 → 5 chars · moved by vite"],
        [3, "patch", 3, "at 4: 4 → 0 chars"],
    ]
    assert lineage.text.tolist()[-1] == "The server listens on port 51730."
    # the raw change keeps the RFC op; only the lineage view names it a patch
    assert run(shell, f"%pcmem changes {rev3.artifact_id}").op.tolist() == ["revise"]


def test_patch_refusals_are_one_line_and_write_nothing(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, f'%pcmem remember --kind fact "{PORT}"')
    entry = rev.changes[0].entry_id
    assert "occurs 2 times" in fail(shell, capsys, f"%pcmem patch {entry} --old 5173 --new 5174")
    assert "does not occur" in fail(shell, capsys, f"%pcmem patch {entry} --old 8080 --new 5174")
    assert "old_string is empty" in fail(shell, capsys, f'%pcmem patch {entry} --old "" --new x')
    assert "required: --new" in fail(shell, capsys, f"%pcmem patch {entry} --old 5173")
    assert run(shell, "%pcmem memories")["head"].tolist() == [1]
    run(shell, f"%pcmem patch {entry} --old 'port 5173 and' --new 'port 5174 and'")
    stale = fail(shell, capsys, f"%pcmem patch {entry} -m {rev.artifact_id}@1 --old 5173/api --new 5174/api")
    assert stale.startswith("UsageError: stale revision:")
    assert run(shell, "%pcmem memories")["head"].tolist() == [2]
