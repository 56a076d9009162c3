"""HTML and text displays of Revision, hit list and citation: registered at load,
escaped, lean (no analyzer tokens, no dataclass dumps)."""

from __future__ import annotations

import powercontext as pc
from powercontext.magics import current_runner, current_service
from powercontext.magics.display import html_table

from .helpers import run

EVIL = "<script>alert('x')</script> & make test"
CJK = "数据库连接超时设置为 30 秒，重试三次。"


def formats(shell, obj) -> dict:
    data, _ = shell.display_formatter.format(obj)
    return data


def test_revision_hits_and_citation_render_escaped(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, f'%pcmem remember --kind fact --reason "<b>why</b>" "{EVIL}"')
    rev = run(shell, f'%pcmem remember --memory {rev.artifact_id} --kind fact "{CJK}"')
    svc, runner = current_service(shell), current_runner(shell)

    rev_out = formats(shell, rev)
    assert rev_out["text/plain"].startswith(f"MemoryRevision {rev.ref} · 2 active · 0 inactive")
    assert "<td>add</td>" in rev_out["text/html"] and str(rev.ref) in rev_out["text/html"]

    res = runner.run(svc.search("make test alert", memories=(rev,), explain=True))
    html, text = formats(shell, res)["text/html"], formats(shell, res)["text/plain"]
    assert "<script>" not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; make test" in html
    assert text.startswith("MemorySearchResult: 1 hit for 'make test alert' · mode fts (requested auto)")
    assert "admitted: matched 3/3 terms" in text
    assert "AdmissionPolicy(" not in text and "matched_terms" not in text

    cjk = runner.run(svc.search("连接超时是多少", memories=(rev,), explain=True))
    shown = formats(shell, cjk)
    assert CJK in shown["text/html"] and CJK[:20] in shown["text/plain"]
    for token_marker in ("u_8fde", "b_8fde_63a5"):  # the analyzer's tokens for 连接
        assert token_marker not in shown["text/html"] + shown["text/plain"]

    cite = runner.run(svc.cite(rev.ref, res[0].entry_id, res[0].entry_version_id))
    cite_out = formats(shell, cite)
    assert cite_out["text/plain"] == (
        f"MemoryCitation({rev.ref} · {cite.entry_id} · {cite.entry_version_id} · hash {cite.entry_content_hash[:12]}…)"
    )
    assert cite_out["text/html"].startswith("<div class='pcmem-citation'>") and cite.entry_version_id in cite_out["text/html"]


def test_reason_is_escaped_in_revision_html(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, '%pcmem remember --kind fact --reason "<b>why</b>" "text"')
    html = formats(shell, rev)["text/html"]
    assert "&lt;b&gt;why&lt;/b&gt;" in html and "<b>why</b>" not in html


def test_unload_removes_the_formatters(shell):
    shell.extension_manager.unload_extension("powercontext.magics")
    try:
        assert pc.MemorySearchResult not in shell.display_formatter.formatters["text/html"].type_printers
    finally:
        shell.extension_manager.load_extension("powercontext.magics")
    assert pc.MemorySearchResult in shell.display_formatter.formatters["text/html"].type_printers


def test_html_table_highlights_labelled_rows():
    import pandas as pd

    frame = pd.DataFrame({"entry_id": ["a", "b"], "text": ["x < y", "ok"]})
    html = html_table(frame, {1: "added"})
    assert "<td>x &lt; y</td>" in html
    assert html.count("data-label=") == 1 and 'data-label="added" style="background:#e6ffed"><td>b</td>' in html
