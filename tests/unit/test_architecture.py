"""Which room may import which: arrows point inward (magics → eval → the core), and inside
``powercontext.eval`` the stages of a run lean one way only.

Every import counts — at module level, under ``if TYPE_CHECKING:`` and lazy ones inside a
function — because deferring an import hides the dependency from Python, not from a reader
asked to change one stage without reading the ones above it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Source folder → the package it installs as (pyproject's package-dir).
PACKAGES = {"powercontext": "powercontext", "eval": "powercontext.eval", "magics": "powercontext.magics"}

#: The eval stages, each with the stages it may import. A corpus is read before anything runs,
#: running retrieves the candidates that scoring replays, and presenting writes what scoring
#: found; judging turns an agent's memory into a corpus, so it stands on corpora and running
#: and no other stage needs it. The doors (harness, __main__, calibrate_cli) may import all.
EVAL_STAGES = {
    "corpora": set(),
    "running": {"corpora"},
    "judging": {"corpora", "running"},
    "scoring": {"corpora", "running"},
    "presenting": {"corpora", "running", "scoring"},
}
#: Modules beside the stages that every stage may import; they import no stage and no door.
EVAL_LEAVES = {"errors", "private", "progress", "runfolder"}
EVAL_DOORS = {"harness", "__main__", "calibrate_cli"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            found[".".join((package, *rel))] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports (a package import counts as its ``__init__``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # `import a.b.c` of a package's name → that package
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _eval_part(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "eval" else None


def _room(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ("eval", "magics") else "core"


def test_the_graph_sees_lazy_imports_and_every_stage():
    # the walker must see what it polices: a lazy import inside a function, and every stage
    assert "powercontext.eval.harness" in GRAPH["powercontext.eval.__main__"]
    assert {_eval_part(m) for m in MODULES} >= set(EVAL_STAGES) | EVAL_LEAVES | EVAL_DOORS


def test_arrows_point_inward_magics_then_eval_then_the_core():
    allowed = {"core": {"core"}, "eval": {"eval", "core"}, "magics": {"magics", "eval", "core"}}
    back = sorted(f"{m} -> {t}" for m, ts in GRAPH.items() for t in ts if _room(t) not in allowed[_room(m)])
    assert back == []


def test_eval_stages_lean_one_way():
    back = []
    for module, targets in GRAPH.items():
        part = _eval_part(module)
        if part is None or part in EVAL_DOORS:
            continue
        for target in targets:
            other = _eval_part(target)
            if other is None or other == part:
                continue
            if part in EVAL_LEAVES:
                ok = other in EVAL_LEAVES
            else:
                ok = other in EVAL_LEAVES or other in EVAL_STAGES[part]
            if not ok:
                back.append(f"{module} -> {target}")
    assert sorted(back) == [], "a stage imports a stage above it (or a door); move what it needs down"
