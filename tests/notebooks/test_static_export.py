"""A notebook exported to HTML shows the widgets' stored tables offline (issue 36).

``jupyter nbconvert --to html`` draws a widget from the notebook's stored widget state
with JavaScript it loads from a CDN: offline, the output is blank. With the widget state
cleared (``--ClearMetadataPreprocessor.enabled=True``, what the README documents) the
exporter falls back to each output's next format, and every workbench widget carries
its current table as ``text/html``."""

from __future__ import annotations

from pathlib import Path

from nbconvert import HTMLExporter
from traitlets.config import Config

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "02_manifests_and_lineage.ipynb"


def export(**preprocessors) -> str:
    body, _ = HTMLExporter(config=Config(preprocessors)).from_filename(str(NOTEBOOK))
    return body


def test_the_documented_offline_export_shows_every_widgets_stored_table():
    offline = export(ClearMetadataPreprocessor={"enabled": True})
    assert "application/vnd.jupyter.widget-view+json" not in offline and "embed-amd.js" not in offline
    for widget in ("ManifestInspector", "LineageExplorer"):
        assert f'<div class="pcmem-widget"><b>{widget}</b>' in offline, widget  # nbconvert re-quotes attributes
    assert offline.count('<table class="pcmem-table">') >= 2


def test_the_default_export_needs_the_widget_javascript_which_is_why_the_readme_says_so():
    default = export()
    assert "application/vnd.jupyter.widget-view+json" in default and "embed-amd.js" in default
    assert 'class="pcmem-widget"' not in default
    readme = (NOTEBOOK.parents[1] / "README.md").read_text()
    assert "nbconvert --to html --ClearMetadataPreprocessor.enabled=True" in readme
