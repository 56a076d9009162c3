"""Issue 45: the AdmissionInspector's ``text`` column was cut off at 1400–1500 px.

Driven in JupyterLab in headless chromium: `%pcmem inspect admission` on a SQLite file,
a query typed into the widget's Query box, then, at several window widths, every ``text`` cell
of its tables must lie inside everything that clips it (the page, the output area, the
table's sideways-scrolling box) and hold its whole text, wrapped over lines if it is
long — English, Chinese (no spaces to break at) and Hebrew (right to left) alike.
"""

from __future__ import annotations

QUERY = "release checklist staging"
ENGLISH = "Release checklist for staging: run make test, migrate the schema, then tag it."
CHINESE = "发布清单：部署到预发布环境之前必须先运行完整的测试套件并确认所有数据库迁移脚本都已提交到仓库 release checklist staging"
HEBREW = "רשימת שחרור: לפני כל פריסה יש להריץ את כל הבדיקות release checklist"
#: matches one query term only: rejected at fts_min_terms=2, so the rejected table has a row
REJECTED = "The staging server listens on port 8080."
ADMITTED = [ENGLISH, CHINESE, HEBREW]

CELLS = [
    # The RFC's initial floors (2 terms, coverage 0.25), pinned as a user pins a policy:
    # which candidate is admitted must not move with the library default.
    "import powercontext as pc\n"
    "pc.AdmissionPolicy.rfc_initial().save('rfc_policy.json')\n"
    "%load_ext powercontext.magics\n"
    "%config PcMem.policy_file = 'rfc_policy.json'\n"
    "%pcmem open inspector.db",
    "%%pcmem remember --kind constraint\n" + "\n\n".join([*ADMITTED, REJECTED]) + "\n",
    "%pcmem inspect admission -o inspector",
]

#: Per ``text`` cell of the inspector's tables: its text, box, the box of everything that
#: clips it (overflow other than visible, and the window), how far its content overflows
#: it, on how many lines its text lies and whether it is too long for one line there;
#: and per header, on how many lines its name lies.
MEASURE = """root => {
  const cells = [], headers = [];
  for (const table of root.querySelectorAll('table.pcmem-table')) {
    const col = [...table.querySelectorAll('thead th')].map(th => th.textContent).indexOf('text');
    if (col < 0) continue;
    for (const th of table.querySelectorAll('thead th')) {
      const range = document.createRange();
      range.selectNodeContents(th);
      headers.push({name: th.textContent, lines: range.getClientRects().length});
    }
    for (const row of table.querySelectorAll('tbody tr:not(.pcmem-empty)')) {
      const td = row.children[col];
      const box = td.getBoundingClientRect();
      let left = 0, right = document.documentElement.clientWidth;
      for (let a = td.parentElement; a; a = a.parentElement) {
        if (getComputedStyle(a).overflowX === 'visible') continue;
        const r = a.getBoundingClientRect();
        left = Math.max(left, r.left + a.clientLeft);
        right = Math.min(right, r.left + a.clientLeft + a.clientWidth);
      }
      const range = document.createRange();
      range.selectNodeContents(td);
      const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      const probe = document.createElement('span');  // the text's width on one line, in the cell's font
      probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap';
      probe.textContent = td.textContent;
      td.appendChild(probe);
      const oneLine = probe.getBoundingClientRect().width;
      probe.remove();
      cells.push({table: table.caption ? table.caption.textContent : '', text: td.textContent,
                  left: box.left, right: box.right, clipLeft: left, clipRight: right,
                  overflow: td.scrollWidth - td.clientWidth, lines: tops.size,
                  needsWrap: oneLine > box.width});
    }
  }
  return {cells, headers};
}"""


def test_text_column_is_whole_and_wraps_at_1400_to_1500_px(open_lab):
    lab = open_lab(width=1400)
    lab.notebook("admission.ipynb", CELLS)
    lab.open("admission.ipynb")
    lab.run_all()
    widget = lab.widget(2)
    query = widget.locator("input[placeholder='query…']")
    query.fill(QUERY)
    query.press("Enter")  # the Query box sends its value on Enter (continuous_update=False)
    widget.locator("table.pcmem-table").nth(2).wait_for(state="attached")  # hits, admitted, rejected

    for width in (1400, 1450, 1500):
        lab.page.set_viewport_size({"width": width, "height": 1000})
        measured = widget.evaluate(MEASURE)
        cells = measured["cells"]
        broken = [h["name"] for h in measured["headers"] if h["lines"] != 1]
        assert not broken, f"at {width} px these headers are broken over lines: {broken}"
        shown = {(c["table"], c["text"]) for c in cells}
        assert shown == {*(("hits", t) for t in ADMITTED), *(("admitted candidates", t) for t in ADMITTED),
                         ("rejected candidates", REJECTED)}, f"at {width} px the tables show {sorted(shown)}"
        for c in cells:
            where = f"at {width} px, {c['table']}: {c['text'][:24]}…"
            assert c["clipLeft"] - 1 <= c["left"] and c["right"] <= c["clipRight"] + 1, (
                f"{where} the text cell spans x {c['left']:.0f}–{c['right']:.0f} px but only "
                f"{c['clipLeft']:.0f}–{c['clipRight']:.0f} px is visible")
            assert c["overflow"] <= 1, f"{where} its text overflows the cell by {c['overflow']} px"
            if c["needsWrap"]:
                assert c["lines"] >= 2, f"{where} a line too long for the cell did not wrap ({c['lines']} line)"
        # the wrapping above was exercised, for both scripts without Latin word breaks
        assert {c["text"] for c in cells if c["needsWrap"] and c["lines"] >= 2} >= {CHINESE, HEBREW}, width
