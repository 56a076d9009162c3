"""report.html reads like a report: a table of contents, a first section that answers
"what should my thresholds be and what do they cost", tables that scroll inside the
page width and fold when long, p-values as <1e-4, no raw JSON, and backends that stay
distinguishable in the plots. Built from a real sweep of a small corpus (notebook 04
renders the full two-database report of the bundled corpora)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd
import pytest

import powercontext as pc

from powercontext.eval import harness
from powercontext.eval.presenting.plots import BACKEND_STYLE, cosine_positions
from powercontext.eval.presenting.report import COLLAPSE_ROWS, MAX_WIDTH, SECTIONS, fmt_p, render_html, stats_overview
from powercontext.eval.presenting.verdict import SMALL, explicit_call
from powercontext.eval.scoring.sweep import Grid

from .fakes import HashEmbedding, write_corpus


class Node:
    def __init__(self, tag: str, attrs: dict, parent: "Node | None") -> None:
        self.tag, self.attrs, self.parent, self.children, self.text = tag, attrs, parent, [], ""

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def iter(self, tag: str):
        for child in self.children:
            if child.tag == tag:
                yield child
            yield from child.iter(tag)

    def all_text(self) -> str:
        return self.text + "".join(c.all_text() for c in self.children)


class Tree(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self, text: str) -> None:
        super().__init__()
        self.root = self.at = Node("#root", {}, None)
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.at)
        self.at.children.append(node)
        if tag not in self.VOID:
            self.at = node

    def handle_endtag(self, tag):
        node = self.at
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None:
            self.at = node.parent

    def handle_data(self, data):
        self.at.text += data


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    corpus = write_corpus(root / "datasets" / "tiny")
    return harness.sweep(corpus, backends=("sqlite",), modes=("fts", "vector", "hybrid"),
                         grid=Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.2, 0.4, 0.6), (1, 8, 10)), out=root / "run",
                         embedding=HashEmbedding(), embedding_cache=root / "emb", progress=False, write=False)


@pytest.fixture(scope="module")
def page(result):
    text = render_html(result)
    return text, Tree(text).root


def test_a_table_of_contents_links_every_section_in_order(page):
    text, root = page
    sections = list(root.iter("section"))
    assert len(sections) == len(SECTIONS) - 1 and all(s.attrs.get("id") for s in sections)  # no external run given
    assert "external" not in {s.attrs["id"] for s in sections}
    (nav,) = root.iter("nav")
    links = [a.attrs["href"] for a in nav.iter("a")]
    assert links == [f"#{s.attrs['id']}" for s in sections]
    assert text.index("<nav") < text.index("<section")  # the contents come before the first section


def test_the_first_section_answers_what_to_set_and_what_it_costs(page, result):
    _, root = page
    first = next(root.iter("section"))
    assert first.attrs["id"] == "recommendation"
    body = first.all_text()
    # the call shown is the one that makes the recommended policy, every threshold spelled out
    call = explicit_call(result.recommended("joint"))
    assert call.startswith("pc.AdmissionPolicy(fts_min_terms=") and call in body
    assert eval(call, {"pc": pc}) == result.recommended("joint")  # noqa: S307
    (table,) = [t for t in first.iter("table") if "thresholds" in [th.all_text() for th in t.iter("th")]]  # the costs
    header = [th.all_text() for th in table.iter("th")]
    assert {"mode", "database", "thresholds", "ndcg@10 [95% CI]", "false adm. [95% CI]", "queries (pos/empty)"} <= set(header)
    rows = [[td.all_text() for td in tr.iter("td")] for tr in table.iter("tr")][1:]
    assert {(r[0], r[1]) for r in rows} == {(m, "sqlite") for m in ("fts", "vector", "hybrid")}
    assert {r[2] for r in rows} >= {"library default", "this run's (mode)", "no-admission"}
    ci = header.index("ndcg@10 [95% CI]")
    assert all(re.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", r[ci]) for r in rows), rows
    images = list(first.iter("img"))
    assert len(images) == 1 and images[0].attrs["src"].startswith("data:image/png;base64,")  # the frontier


def test_the_first_screen_names_the_library_defaults_real_thresholds_beside_the_runs_own(page, result):
    """Issue 36: the report opened with the run's choice written as a difference from
    AdmissionPolicy() and called another row "the library default". (Issue 45: the box
    names the default by how to get it and shows the knobs that differ; every
    threshold is spelled out in the lines to paste.)"""
    _, root = page
    first = next(root.iter("section"))
    verdict = next(d for d in first.iter("div") if d.attrs.get("class") == "verdict").all_text()
    default = pc.AdmissionPolicy()
    body = first.all_text()
    paste = body.split("To paste", 1)[1]
    for name in ("fts_min_terms", "fts_min_coverage", "hybrid_fts_min_terms", "hybrid_fts_min_coverage",
                 "vector_min_centred", "cross_script_min_terms", "vector_uncovered"):
        value = getattr(default, name)
        shown = f"{value:g}" if isinstance(value, float) else repr(value)
        assert f"{name}={shown}" in paste, name
    assert verdict.index("Library default") < verdict.index("This run's recommendation")
    assert "leave-one-corpus-out" in verdict and "embedding profile" in verdict
    assert "AdmissionPolicy.default_for('test-hash-64')" in verdict
    assert "Why they differ" in body and "To paste" in body and explicit_call(default) in body
    assert "the library default" not in body.split("Library default")[0]  # no other row claims to be it
    # 16 queries: every rate rests on fewer than 20, and the page says so
    assert any(p.attrs.get("class") == "warn" and f"fewer than {SMALL}" in p.all_text() for p in first.iter("p"))
    text = page[0].split("<section id='recommendation'>", 1)[1].split("</section>", 1)[0]
    assert "<i>empty</i>: share of positive queries (with a relevant entry) given nothing" in text


def test_tables_scroll_inside_the_page_and_long_ones_are_folded(page):
    text, root = page
    assert f"max-width:{MAX_WIDTH}px" in text and ".scroll{overflow-x:auto;max-width:100%}" in text
    tables = list(root.iter("table"))
    assert len(tables) > 10
    for table in tables:
        assert any(a.tag == "div" and a.attrs.get("class") == "scroll" for a in table.ancestors())
        rows = len(list(table.iter("tr"))) - 1
        folded = any(a.tag == "details" for a in table.ancestors())
        assert rows <= 40 or folded, f"a {rows}-row table is not folded"
    folded = [d for d in root.iter("details")]
    assert folded and all(next(d.iter("summary")).all_text().endswith("(click to show)") for d in folded)
    # the 90-odd statistical tests: a one-screen overview, the full list folded
    stats = next(s for s in root.iter("section") if s.attrs["id"] == "stats")
    overview, full = list(stats.iter("table"))
    assert len(list(overview.iter("tr"))) - 1 <= 18 and any(a.tag == "details" for a in full.ancestors())
    for img in root.iter("img"):
        assert int(img.attrs["width"]) <= MAX_WIDTH  # drawn at most page-wide, never stretched


def test_no_raw_json_and_p_values_print_at_their_resolution(page, result):
    text, root = page
    visible = root.all_text()
    assert not re.search(r"\{\s*['\"]\w+['\"]\s*:", visible), "a raw dict/JSON reached the page"
    timing = next(s for s in root.iter("section") if s.attrs["id"] == "timing")
    assert "profile" in timing.all_text() and "test-hash-64" in timing.all_text()  # embedding facts as a table
    assert fmt_p(3e-9) == "<1e-4" and fmt_p(0.01234) == "0.0123" and fmt_p(float("nan")) == ""
    stats = next(s for s in root.iter("section") if s.attrs["id"] == "stats")
    full = list(stats.iter("table"))[1]
    header = [th.all_text() for th in full.iter("th")]
    rows = [[td.all_text() for td in tr.iter("td")] for tr in full.iter("tr")][1:]
    p_values = [row[header.index("p_value")] for row in rows]
    assert p_values and all(re.fullmatch(r"<1e-4|[01]\.\d{4}|", p) for p in p_values), p_values  # "": no test
    assert "0.0000" not in p_values and any(p for p in p_values)


def test_stats_overview_is_one_row_per_comparison():
    stats = pd.DataFrame([
        dict(backend="sqlite", mode="fts", a="recommended", b="initial", metric=m, mean_a=0.3, mean_b=0.4, p_value=p)
        for m, p in (("ndcg@10", 1e-9), ("false_admission", 0.25), ("set_f1", float("nan")))])
    overview = stats_overview(stats)
    assert overview.to_dict("records") == [{
        "backend": "sqlite", "mode": "fts", "comparison": "recommended vs initial",
        "ndcg@10": "-0.100 (p <1e-4)", "false_admission": "-0.100 (p 0.2500)", "set_f1": "-0.100"}]


def test_backends_are_drawn_distinguishably_and_no_admission_sits_off_axis():
    sqlite, ocean = BACKEND_STYLE["sqlite"], BACKEND_STYLE["oceanbase"]
    assert sqlite["linestyle"] != ocean["linestyle"] and sqlite["marker"] != ocean["marker"]
    assert ocean.get("markerfacecolor") == "none" and ocean["zorder"] > sqlite["zorder"]  # hollow, on top

    from matplotlib.figure import Figure

    ax = Figure().subplots()
    x = cosine_positions(ax, pd.Series([-1.0, 0.0, 0.3, 0.6]))
    assert -0.5 < x.iloc[0] < 0.0 and list(x.iloc[1:]) == [0.0, 0.3, 0.6]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "none" and "-1.0" not in labels


def test_a_test_false_admission_above_the_bound_and_small_samples_are_said():
    """Issue 36: the recommended hybrid policy showed test false admission 0.390 under a
    stated bound of 0.30, and a 3-negative corpus showed [0.000, 0.000] without a word."""
    from types import SimpleNamespace

    from powercontext.eval.scoring.recommend import Objective
    from powercontext.eval.presenting.verdict import bound_notes, sample_note, small_notes

    rows = [dict(split="test", policy=p, backend="sqlite", mode="hybrid", label=label, false_admission=fa,
                 positive=120, empty=3)
            for p, label, fa in (("recommended", "a", 0.390), ("joint", "a", 0.390), ("default", "b", 0.5))]
    result = SimpleNamespace(objective=Objective(bound=0.3), summary=pd.DataFrame(rows))
    (note,) = bound_notes(result)  # one note for recommended = joint; the library default is not "this run's"
    assert "0.390 of the empty-answer queries: above the 0.3 bound it met on the dev split" in note
    (small,) = small_notes(result)
    assert "false admission on 3 empty-answer queries" in small and "nDCG@10" not in small
    assert sample_note(20, 20) == "" and "nDCG@10 on 1 positive query" in sample_note(1, 50)


def test_a_sweep_without_the_floors_family_still_writes_its_report(tmp_path):
    """The threshold plots draw the default's family, or — a run that did not sweep it
    — the recommendation's: a run of other families only (e.g. a model comparison of
    the library's families) still gets its plots (issue 45: they once read the RFC's
    floors only, and such a run had none)."""
    from powercontext.eval import harness
    from powercontext.eval.scoring.sweep import Grid

    from .fakes import write_corpus

    folder = write_corpus(tmp_path / "tiny")
    result = harness.sweep(folder, modes=("fts",), grid=Grid((1, 2), (0.0, 0.5), limits=(8, 10),
                                                             families=("centred+cross-script",)),
                           out=tmp_path / "run", progress=False)
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert set(result.sweep["family"]) == {"centred+cross-script"}
    assert "Metric vs threshold" in page and "Leave one corpus out" in page
    assert "The family drawn is <code>centred+cross-script</code>: this run's recommendation's" in page
