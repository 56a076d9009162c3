"""Issue 45 §2: every report committed under reports/ was written by the code that
ships. The README called ``reports/thresholds/report.html`` "the committed calibration
run that justifies the MiniLM default" while its first screen recommended a policy that
was no longer the default. Each committed report's first screen names its run's
embedding profile and the default it was measured with (``data-*`` attributes of the
verdict box); that default must be today's ``AdmissionPolicy.default_for`` of the
profile, or the report must be regenerated (or retired)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from powercontext.memory.admission import AdmissionPolicy

from .test_report import Tree

ROOT = Path(__file__).resolve().parents[2]
REPORTS = sorted((ROOT / "reports").rglob("report.html"))


def verdict_box(path: Path):
    root = Tree(path.read_text(encoding="utf-8")).root
    first = next((s for s in root.iter("section") if s.attrs.get("id") == "recommendation"), None)
    assert first is not None, f"{path}: no first screen"
    box = next((d for d in first.iter("div") if d.attrs.get("class") == "verdict"), None)
    assert box is not None and "data-default-policy" in box.attrs, (
        f"{path.relative_to(ROOT)}: written by an older report (no default on its first screen to check); "
        "regenerate it with the sweep its README names, or retire it")
    return box


def test_every_committed_report_shows_todays_default_for_its_profile():
    assert REPORTS, "the README links committed reports; none found"
    for path in REPORTS:
        box = verdict_box(path)
        profile = box.attrs.get("data-profile") or None
        shown = AdmissionPolicy.from_dict(json.loads(box.attrs["data-default-policy"]))
        assert shown == AdmissionPolicy.default_for(profile), (
            f"{path.relative_to(ROOT)}: its default for {profile!r} is {shown!r}, the library's is "
            f"{AdmissionPolicy.default_for(profile)!r}; regenerate the report")
        assert "AdmissionPolicy.default_for(" in box.all_text()


def test_the_readme_links_only_reports_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"reports/[\w./-]+", readme))
    assert linked
    for link in linked:
        assert (ROOT / link.rstrip(".")).exists(), f"the README links {link}, which is not in the checkout"


def test_the_thresholds_regeneration_reads_this_checkouts_corpora():
    """summary.json records where the sweep that wrote it read its corpora — an absolute
    path in another clone (``/work/h4/datasets/atlas-etl``). Regenerating must sweep the
    corpora that ship with this checkout, never that folder (which may hold other texts,
    or be gone)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("regenerate_thresholds", ROOT / "reports" / "regenerate_thresholds.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    report = json.loads((ROOT / "reports" / "thresholds" / "summary.json").read_text(encoding="utf-8"))
    paths = script.corpora(report)
    assert [p.name for p in paths] == [d["name"] for d in report["datasets"]]
    for path in paths:
        assert path.parent == ROOT / "datasets" and (path / "memories.jsonl").is_file(), path


#: What the shipped verbs write per profile into reports/calibration/<profile>/:
#: ``calibrate`` (eval/presenting/calibration_report.py) and ``probability-study``
#: (eval/presenting/probability_study_report.py).
CALIBRATION_REPORT_FILES = {"calibration.md", "cells.csv", "reliability.png", "probability_study.md",
                            "probability_study.csv"}


def test_the_calibration_reports_hold_only_what_the_shipped_verbs_write():
    """The first study's loo_three_originals tables came from a script that never shipped
    and read each hybrid candidate by its own channel's probability: once the hybrid cell
    refit changed those rows, nothing that ships could regenerate them (issue 45)."""
    folders = [p for p in (ROOT / "reports" / "calibration").iterdir() if p.is_dir()]
    assert {p.name for p in folders} == {"minilm", "e5"}
    for folder in folders:
        assert {p.name for p in folder.iterdir()} == CALIBRATION_REPORT_FILES, folder
