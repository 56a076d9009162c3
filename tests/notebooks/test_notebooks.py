"""The tutorial notebooks are committed executed and checked by strict nbval.

nbval only compares cells that HAVE stored outputs, so a notebook committed without
outputs would pass `pytest --nbval` trivially. These tests make sure every notebook was
executed top to bottom in one clean run (`make notebooks`), stored no errors, ignores
outputs only where it says why, and that pytest runs nbval strictly.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import get_sanitize_patterns

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = NOTEBOOKS / "sanitize.cfg"
EXPECTED = [
    "01_quickstart.ipynb",
    "02_manifests_and_lineage.ipynb",
    "03_search_modes_and_admission.ipynb",
    "04_threshold_evaluation.ipynb",
    "05_oceanbase.ipynb",
    "06_your_own_corpus.ipynb",
    "07_runtime.ipynb",
    "08_embedding_models.ipynb",
    "09_judge_your_memory.ipynb",
]
IGNORE_MARKER = "NBVAL_IGNORE_OUTPUT"


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def code_cells(path: Path) -> list:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def ignored(cell) -> bool:
    return any(line.strip().lstrip("#").strip() == IGNORE_MARKER for line in cell.source.splitlines()
               if line.strip().startswith("#"))


def test_the_tutorial_notebooks_are_there():
    assert [p.name for p in notebook_paths()] == EXPECTED


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_every_code_cell_was_executed_in_order_and_has_outputs(path):
    cells = code_cells(path)
    assert cells, f"{path.name} has no code cells"
    counts = [c.execution_count for c in cells]
    missing = [i for i, c in enumerate(cells) if c.execution_count is None or not c.outputs]
    assert not missing, (
        f"{path.name}: code cells {missing} have no stored output or execution count; "
        "run `make notebooks` and commit the executed notebook"
    )
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: execution counts {counts} are not one clean top-to-bottom run; run `make notebooks`"
    )


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_no_errors_or_stderr_are_stored(path):
    for i, cell in enumerate(code_cells(path)):
        for out in cell.outputs:
            assert out.output_type != "error", f"{path.name} cell {i} stored an error: {out.get('ename')}"
            assert not (out.output_type == "stream" and out.name == "stderr"), (
                f"{path.name} cell {i} stored stderr (warnings or progress bars vary between runs): {out.text[:200]!r}"
            )


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_ignored_outputs_say_why_and_compared_outputs_hold_no_temp_paths(path):
    for i, cell in enumerate(code_cells(path)):
        lines = [line.strip() for line in cell.source.splitlines()]
        if ignored(cell):
            at = next(n for n, line in enumerate(lines) if line.lstrip("#").strip() == IGNORE_MARKER)
            reason = lines[at + 1] if at + 1 < len(lines) else ""
            assert reason.startswith("#") and len(reason) > 10, (
                f"{path.name} cell {i}: put the reason for {IGNORE_MARKER} in a comment on the next line"
            )
            continue
        text = json.dumps(cell.outputs)
        assert not re.search(r"/tmp/|pc-0\d-[a-z0-9_]{8}", text), (
            f"{path.name} cell {i}: a temporary path reached a compared output"
        )


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebooks_run_on_the_python3_kernel(path):
    assert nbformat.read(path, as_version=4).metadata["kernelspec"]["name"] == "python3"


def test_pytest_runs_the_notebooks_with_strict_nbval():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    addopts = options["addopts"].split()
    assert "notebooks" in options["testpaths"]
    assert "--nbval" in addopts and "--nbval-lax" not in addopts
    assert addopts[addopts.index("--nbval-sanitize-with") + 1] == "notebooks/sanitize.cfg"


def test_sanitize_patterns_parse_and_compile():
    patterns = get_sanitize_patterns(SANITIZE.read_text())
    assert patterns, "nbval found no regex/replace pairs in notebooks/sanitize.cfg"
    for regex, _ in patterns:
        re.compile(regex)


# ---------------------------------------------------------------- outside a live kernel

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def widget_outputs(path: Path) -> list[dict]:
    return [out for cell in code_cells(path) for out in cell.outputs if WIDGET_VIEW in out.get("data", {})]


def test_make_notebooks_stores_widget_state():
    recipe = (ROOT / "Makefile").read_text().split("\nnotebooks:")[1].split("\n\n")[0]
    assert "--ExecutePreprocessor.store_widget_state=True" in recipe


@pytest.mark.parametrize("path", [p for p in notebook_paths() if widget_outputs(p)], ids=lambda p: p.stem)
def test_widget_cells_render_without_a_kernel(path):
    """Every displayed widget's state is stored (nbviewer and nbconvert draw it), and
    its output also holds the widget's table as text/plain and text/html (GitHub, or any
    renderer without widget support, shows that instead of `Widget(children=(HBox(…`).
    A widget class with ``static_fallback = False`` must still have its old display
    stored: the flag goes on when its notebook is re-executed."""
    from powercontext.magics import widgets

    state = nbformat.read(path, as_version=4).metadata["widgets"][WIDGET_STATE]["state"]
    for out in widget_outputs(path):
        model = out["data"][WIDGET_VIEW]["model_id"]
        assert model in state, f"{path.name}: widget {model} is displayed but its state was not stored"
        assert state[model]["model_name"] == "VBoxModel"
        text, html = out["data"].get("text/plain", ""), out["data"].get("text/html", "")
        widget = getattr(widgets, text.split("(")[0])
        if not widget.static_fallback:
            assert not html, f"{path.name}: {widget.__name__} stores a fallback but the class has it off"
            continue
        assert "children=(" not in text and "\n" in text, f"{path.name}: a widget shows its raw repr: {text[:80]!r}"
        assert "<table" in html, f"{path.name}: a widget output has no HTML table for static renderers"


def test_nbconvert_html_draws_widgets_and_falls_back_to_their_tables():
    from nbconvert import HTMLExporter

    path = NOTEBOOKS / "02_manifests_and_lineage.ipynb"
    live, _ = HTMLExporter().from_filename(str(path))
    assert f'<script type="{WIDGET_STATE}">' in live and f'<script type="{WIDGET_VIEW}">' in live
    # a renderer that cannot draw widgets (GitHub's, for one) takes the next richest type
    static, _ = HTMLExporter(config={"NbConvertBase": {"display_data_priority": ["text/html", "text/plain"]}}).from_filename(str(path))
    assert "children=(HBox" not in static and "pcmem-table" in static
    assert static.count("<b>ManifestInspector</b>") == 1 and static.count("<b>LineageExplorer</b>") == 1


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_each_notebook_is_stored_as_jupyterlab_saves_it(path):
    """Running 06 and 08 in JupyterLab left them modified in git status (issue 45): it
    merges a cell's consecutive outputs of one stream and writes the running kernel's
    display name. ``make notebooks`` stores them that way (notebooks/jupyterlab_form.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("jupyterlab_form", NOTEBOOKS / "jupyterlab_form.py")
    form = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(form)
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.kernelspec.display_name == "Python 3 (ipykernel)"
    for cell in nb.cells:
        if cell.cell_type == "code":
            kinds = [(o.output_type, o.get("name")) for o in cell.outputs]
            assert not any(a == b == ("stream", a[1]) for a, b in zip(kinds, kinds[1:])), (path.name, cell.source[:60])
    assert form.as_saved(nb) == nb
