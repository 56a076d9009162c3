"""One notebook, executed in a real Jupyter kernel (nbclient), on SQLite and on the
local OceanBase server: the magics and widgets run while the kernel's own event loop
is running, rich displays reach the notebook, a user error is one line."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

PUSH = "Run make test before every push."
SITE = "site/ is generated output: never edit it."
PORT = "The dev server listens on port 5173."


def cells(target: str) -> list:
    code = nbformat.v4.new_code_cell
    return [
        code("%load_ext powercontext.magics"),
        code("import asyncio\n"
             "assert asyncio.get_event_loop().is_running()  # the kernel's loop runs: no asyncio.run here\n"
             "%config PcMem.fts_min_terms = 2\n%config PcMem.fts_min_coverage = 0.25\n"
             f"%pcmem open {target}"),
        code(f'%pcmem remember --kind preference "{PUSH}" -o r1'),
        code(f"%%pcmem remember --memory {{r1.artifact_id}} --kind constraint\n{SITE}\n\n{PORT}\n"),
        code("%pcmem manifest {r1.artifact_id} -o manifest\n"
             f"port = manifest.loc[manifest.text == {PORT!r}, 'entry_id'].item()\n"
             "%pcmem forget {port} --reason user_requested"),
        code("%pcmem manifest {r1.artifact_id} --diff -o diff\n"
             "assert diff.change.tolist() == ['deactivated'], diff\n"
             "%pcmem lineage {port} -o lin\n"
             "assert lin.op.tolist() == ['add', 'deactivate'], lin\n"
             "lin"),
        code('%pcmem search "make test site dev server port" --explain -o ex\n'
             "assert ex.admitted.tolist().count(True) == 1 and ex.admitted.tolist().count(False) == 1, ex\n"
             "ex"),
        code("from powercontext.magics import current_service, current_runner\n"
             "from powercontext.magics.widgets import AdmissionInspector, ManifestInspector\n"
             "mi = ManifestInspector(current_service(), r1.artifact_id)\n"
             "mi.revision.value = 2\n"
             "assert sorted(mi.frame.change) == ['', 'added', 'added'], mi.frame\n"
             "ai = AdmissionInspector(current_service(), [r1.artifact_id], query='make test site dev server port')\n"
             "ai.fts_min_terms.value = 1\n"
             "ai.fts_min_coverage.value = 0.0\n"
             "assert len(ai.admitted) == 2 and ai.retrievals == 1, ai.admitted\n"
             "mi"),
        code("svc, run = current_service(), current_runner().run\n"
             "res = run(svc.search('make test push', memories=[run(svc.head(r1.artifact_id))], policy=svc.policy))\n"
             "res"),
        code("%pcmem manifest mem_art_does_not_exist", metadata={"tags": ["raises-exception"]}),
        code("%pcmem close"),
    ]


def execute(tmp_path, target: str):
    nb = nbformat.v4.new_notebook(cells=cells(target))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    nbformat.write(nb, tmp_path / "workbench.ipynb")
    return nb


def test_notebook_runs_the_magics_and_widgets_in_a_real_kernel(tmp_path, target):
    nb = execute(tmp_path, target)
    out = [c.outputs for c in nb.cells]

    opened = "".join(o.get("text", "") for o in out[1])
    assert opened.startswith("opened ") and "0 Memories" in opened
    created = "".join(o.get("text", "") for o in out[2] if o["output_type"] == "stream")
    assert created.startswith("created mem_art_") and "(now current; `%pcmem use REF` to switch)" in created
    (revision,) = [o["data"] for o in out[2] if "data" in o]
    assert "MemoryRevision" in revision["text/html"] and revision["text/plain"].startswith("MemoryRevision mem_art_")
    assert "<table" in out[5][0]["data"]["text/html"] and "user_requested" in out[5][0]["data"]["text/html"]
    # stdout may arrive as several stream messages under load: read the cell's text and its display apart
    search_text = "".join(o.get("text", "") for o in out[6] if o["output_type"] == "stream")
    search_table = [o["data"] for o in out[6] if "data" in o]
    assert "mode fts" in search_text, out[6]
    assert len(search_table) == 1 and "matched 1/6 terms, needs 2" in search_table[0]["text/plain"], out[6]
    assert "application/vnd.jupyter.widget-view+json" in out[7][0]["data"]
    hits = out[8][0]["data"]
    assert "MemorySearchResult" in hits["text/html"] and PUSH in hits["text/html"]

    error = out[9]
    assert [o["output_type"] for o in error] == ["stream"] and error[0]["name"] == "stderr"
    assert error[0]["text"].strip().startswith("UsageError: unknown memory 'mem_art_does_not_exist'")
    assert error[0]["text"].strip().count("\n") == 0
    assert "closed" in out[10][0]["text"]
