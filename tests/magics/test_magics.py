"""%pcmem driven through an InteractiveShell: returned DataFrames, -o capture, the
traitlets options, the seekdb and eval branches. The session test runs on both
databases."""

from __future__ import annotations

import asyncio
import shutil
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

import powercontext as pc
import powercontext.magics as magics
from powercontext.magics import current_runner, current_service

from .helpers import fail, run

PUSH = "Run make test before every push."
SITE = "site/ is generated output: never edit it."
PORT = "The dev server listens on port 5173."


def remember_three(ip) -> str:
    rev = run(ip, f'%pcmem remember --kind preference "{PUSH}" -o r1')
    run(ip, f"%%pcmem remember --memory {rev.artifact_id} --kind constraint\n{SITE}\n\n{PORT}\n")
    return rev.artifact_id


def test_workbench_session(shell, target):
    assert run(shell, f"%pcmem open {target} -o svc") is None
    assert isinstance(shell.user_ns["svc"], pc.MemoryService) and shell.user_ns["svc"] is current_service(shell)

    rev = run(shell, f'%pcmem remember --kind preference "{PUSH}" -o r1')
    assert isinstance(rev, pc.MemoryRevision) and shell.user_ns["r1"] is rev and rev.revision == 1
    mid = rev.artifact_id
    rev2 = run(shell, f"%%pcmem remember --memory {mid[:-3]} --kind constraint\n{SITE}\n\n{PORT}\n")
    assert rev2.ref == pc.ArtifactRef(mid, 2) and [c.op for c in rev2.changes] == ["add", "add"]

    memories = run(shell, "%pcmem memories -o mems")
    assert shell.user_ns["mems"] is memories
    assert memories.to_dict("records") == [{"memory": mid, "head": 2, "active": 3, "inactive": 0}]

    manifest = run(shell, f"%pcmem manifest {mid}")
    assert list(manifest.columns) == ["entry_id", "version", "state", "kind", "text", "hash"]
    assert sorted(manifest.text) == sorted([PUSH, SITE, PORT])
    assert set(manifest.version) == {1} and set(manifest.hash.str.len()) == {12}
    port = manifest.loc[manifest.text == PORT, "entry_id"].item()

    rev3 = run(shell, f"%pcmem forget {port} --reason user_requested")
    assert [(c.op, c.entry_id, c.reason) for c in rev3.changes] == [("deactivate", port, "user_requested")]
    diff = run(shell, f"%pcmem manifest {mid} --diff")
    assert diff[["change", "entry_id", "version", "previous_version", "state"]].values.tolist() == [
        ["deactivated", port, 1, 1, "inactive"]
    ]
    assert len(run(shell, f"%pcmem manifest {mid}@1")) == 1
    assert run(shell, f"%pcmem manifest {mid} --state inactive").entry_id.tolist() == [port]

    run(shell, f"%pcmem reactivate {port[:-2]} --reason oops")
    rev5 = run(shell, f'%pcmem remember --entry {port} --kind fact "The dev server listens on port 5174." --reason moved')
    assert [(c.op, c.reason) for c in rev5.changes] == [("revise", "moved")]

    lineage = run(shell, f"%pcmem lineage {port} -o lin")
    assert lineage[["revision", "op", "version", "state", "reason"]].values.tolist() == [
        [2, "add", 1, "active", ""],
        [3, "deactivate", 1, "inactive", "user_requested"],
        [4, "reactivate", 1, "active", "oops"],
        [5, "revise", 2, "active", "moved"],
    ]
    assert lineage.text.tolist()[-1] == "The dev server listens on port 5174." and lineage.kind.tolist()[-1] == "fact"

    changes = run(shell, f"%pcmem changes {mid} --since 3")
    assert changes[["revision", "op", "reason"]].values.tolist() == [[4, "reactivate", "oops"], [5, "revise", "moved"]]
    assert run(shell, f"%pcmem changes {mid}").revision.tolist() == [5]

    hits = run(shell, '%pcmem search "what must I run before a push" -o hits')
    assert list(hits.columns) == ["rank", "score", "matched_by", "memory", "entry_id", "kind", "text"]
    assert hits.text.tolist() == [PUSH] and hits.matched_by.tolist() == ["fts"] and hits.memory.tolist() == [f"{mid}@5"]
    assert hits.score.tolist() == [round(1 / 61, 6)] and hits.attrs["mode"] == "fts"

    explain = run(shell, f'%pcmem search "make test site dev server port" --memory {mid} --explain')
    verdicts = {row.text: (row.admitted, row.matched, row.query_terms, row.hit_rank) for row in explain.itertuples()}
    assert verdicts[PUSH][:3] == (True, 2, 6) and verdicts[SITE] == (False, 1, 6, pd.NA)
    assert "matched 1/6 terms, needs 2" in explain.loc[explain.text == SITE, "reason"].item()
    assert sorted(explain.hit_rank.dropna().tolist()) == [1, 2] and set(explain.channel) == {"fts"}

    status = run(shell, "%pcmem status")
    assert status.loc["backend", "value"] == ("sqlite" if target.endswith(".db") else "oceanbase")
    assert status.loc["memories", "value"] == "1" and status.loc["fts", "value"] == "True"


def test_duplicate_remember_says_unchanged(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    mid = remember_three(shell)
    capsys.readouterr()
    again = run(shell, f'%pcmem remember --memory {mid} --kind preference "{PUSH}" -o again')
    out = capsys.readouterr().out
    # nothing to display (a Revision would show its own old changes), the head kept in -o
    assert again is None and shell.user_ns["again"].revision == 2
    assert out.strip() == f"unchanged: it already holds exactly that; no new Revision — the head stays {mid}@2 · 3 active · 0 inactive"


def test_options_are_traitlets_set_with_config(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    mid = remember_three(shell)
    query = '%pcmem search "make test dev server port"'
    assert len(run(shell, query)) == 2
    run(shell, "%config PcMem.limit = 1")
    run(shell, "%config PcMem.preview_width = 10")
    narrow = run(shell, query)
    assert len(narrow) == 1 and narrow.text.str.len().max() == 10 and narrow.text[0].endswith("…")
    run(shell, "%config PcMem.kind = 'decision'")
    rev = run(shell, f'%pcmem remember --memory {mid} "We chose SQLite for local runs."')
    assert run(shell, f"%pcmem manifest {mid} --diff").kind.tolist() == ["decision"] and rev.revision == 3
    run(shell, "%config PcMem.mode = 'fts'")
    assert run(shell, query).attrs["requested_mode"] == "fts"


def test_search_thresholds_from_flags(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    remember_three(shell)
    strict = run(shell, '%pcmem search "make test site dev server port"')
    lax = run(shell, '%pcmem search "make test site dev server port" --fts-min-terms 1 --fts-min-coverage 0')
    assert len(strict) == 2 and len(lax) == 3


def test_magics_work_while_the_callers_event_loop_runs(shell, sqlite_target):
    """Like a Jupyter kernel: the calling thread's loop is running."""

    async def inside_a_running_loop():
        assert asyncio.get_running_loop().is_running()
        run(shell, f"%pcmem open {sqlite_target}")
        remember_three(shell)
        return run(shell, "%pcmem memories")

    frame = asyncio.run(inside_a_running_loop())
    assert frame.active.tolist() == [3]

    async def where():
        return threading.current_thread()

    private = current_runner(shell).run(where())
    assert private is not threading.current_thread() and private.daemon


def test_open_seekdb_uses_the_configured_server(shell, oceanbase_url, monkeypatch):
    """--seekdb goes through ensure_server; POWERCONTEXT_OCEANBASE_URL points it at the
    session's server, so nothing new is started."""
    from powercontext.backends.seekdb.urls import drop_database

    monkeypatch.setenv("POWERCONTEXT_OCEANBASE_URL", oceanbase_url)
    database = "pcm_seekdb_magic"
    drop_database(oceanbase_url, database)
    try:
        run(shell, f"%pcmem open --seekdb --database {database}")
        status = run(shell, "%pcmem status")
        assert status.loc["backend", "value"] == "oceanbase" and status.loc["target", "value"].endswith("/" + database)
        remember_three(shell)
        assert run(shell, "%pcmem memories").active.tolist() == [3]
    finally:
        run(shell, "%pcmem close")
        drop_database(oceanbase_url, database)


def test_help_lists_every_subcommand_and_the_package_docs_name_them(shell, capsys):
    run(shell, "%pcmem help")
    out = capsys.readouterr().out
    commands = sorted(magics.current_magics(shell).commands)
    assert commands == sorted(
        ["open", "close", "status", "memories", "remember", "patch", "forget", "reactivate", "manifest",
         "lineage", "changes", "verify", "maintain", "migrate", "search", "eval", "inspect", "judge", "runtime", "use"]
    )
    for name in commands:
        assert f"%pcmem {name}" in out
        assert f"``{name}``" in magics.__doc__, f"{name} is missing from powercontext.magics' docstring"
    run(shell, "%pcmem search --help")
    assert "--explain" in capsys.readouterr().out


def test_close_then_reads_need_an_open_database(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    run(shell, "%pcmem close")
    assert "closed" in capsys.readouterr().out
    assert "no database is open" in fail(shell, capsys, "%pcmem memories")


def test_a_bare_bundled_corpus_name_resolves_from_any_directory(tmp_path, monkeypatch):
    from powercontext.eval.corpora.datasets import BUNDLED_ROOT
    from powercontext.eval.harness import resolve_datasets

    monkeypatch.chdir(tmp_path)
    assert resolve_datasets("atlas-etl") == [BUNDLED_ROOT / "atlas-etl"]
    assert (BUNDLED_ROOT / "atlas-etl" / "memories.jsonl").is_file()
    (tmp_path / "atlas-etl").mkdir()  # a folder of that name here wins: a path means what it says
    assert resolve_datasets("atlas-etl") == [Path("atlas-etl")]


def test_eval_without_harness_prints_one_line(shell, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "powercontext.eval.harness", None)  # import raises ImportError
    capsys.readouterr()
    assert run(shell, "%pcmem eval --dataset datasets/harbor-web") is None
    out = capsys.readouterr().out.strip()
    assert out.count("\n") == 0 and "needs the eval extra" in out


@pytest.mark.parametrize("widget", ["manifest", "lineage", "admission"])
def test_inspect_opens_a_widget_on_the_current_service(shell, sqlite_target, widget):
    from powercontext.magics import widgets

    run(shell, f"%pcmem open {sqlite_target}")
    mid = remember_three(shell)
    w = run(shell, f"%pcmem inspect {widget} {mid}")
    expected = {"manifest": widgets.ManifestInspector, "lineage": widgets.LineageExplorer,
                "admission": widgets.AdmissionInspector}[widget]
    assert isinstance(w, expected) and w.svc is current_service(shell)


def test_open_seekdb_starts_a_server_and_close_stops_it(shell, tmp_path, monkeypatch):
    """Without POWERCONTEXT_OCEANBASE_URL, `open --seekdb DIR` starts seekdb on DIR; a
    second session attaches to it (not owned); `close` stops the server it started."""
    from powercontext.magics import Session

    monkeypatch.delenv("POWERCONTEXT_OCEANBASE_URL", raising=False)
    base = tmp_path / "seekdb"
    run(shell, f"%pcmem open --seekdb {base} --database pc_started")
    session = magics.current_magics(shell).session
    server = session.server
    try:
        assert server is not None and server.running and server.base_dir == base.resolve()
        assert run(shell, "%pcmem status").loc["server", "value"] == f"seekdb pid {server.pid} port {server.port}"
        remember_three(shell)

        other = Session()
        other.open_seekdb(base, "pc_started")
        assert other.server is None and other.server_url == server.url  # attached, not owned
        assert other.run(other.service.memories())[0].revision == 2
        other.close()
        assert server.running  # closing the attached session leaves the server alone
    finally:
        run(shell, "%pcmem close")
    assert not server.running and session.server is None
    shutil.rmtree(base)  # its preallocated data file is ~1.3 GB


def test_config_thresholds_become_the_session_policy(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    from powercontext.magics import current_service

    assert current_service().policy.fts_min_terms == 2  # pinned by the fixture
    shell.run_line_magic("config", "PcMem.vector_min_cosine = 0.6")
    assert current_service().policy.vector_min_cosine == 0.6 and current_service().policy.fts_min_terms == 2


def test_a_search_that_admits_nothing_points_at_explain(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    remember_three(shell)
    capsys.readouterr()
    assert run(shell, '%pcmem search "who approves schema migrations"').empty
    out = capsys.readouterr().out
    assert ("nothing admitted: `%pcmem search 'who approves schema migrations' --explain` "
            "lists every retrieved candidate and why it was rejected") in out.splitlines()
    run(shell, '%pcmem search "what must I run before a push"')
    assert "nothing admitted" not in capsys.readouterr().out
