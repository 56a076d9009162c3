"""A real Git repository drives GitChangeSource → candidate → Revision on every
database: a revision only where the patch changes a fact an entry states and cites;
never a deactivation because text disappeared."""

import pytest

import powercontext as pc
from powercontext.evidence import git_change

from ..gitrepo import Repo

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "powercontext"
version = "0.1.0"
requires-python = ">=3.11"
"""
MAKEFILE = """test:
\tuv run pytest

docs-test:
\tuv run pytest docs

lint:
\tuv run ruff check .
"""
DEV_YAML = """server:
  host: 127.0.0.1
  port: 5173   # vite default
"""
FACT_BUILD = "powercontext uses uv to manage dependencies and Hatchling to build."
FACT_DOCS = "Validation convention: prefer make docs-test for documentation-only changes."
FACT_PORT = "The dev server listens on port 5173."
FACT_ISSUE = "Flaky test tracked as issue 5173; do not retry it blindly."
FACT_TWICE = "Port 5173 is the dev server; never reuse 5173 for the API."


@pytest.fixture
def repo(tmp_path):
    repo = Repo(tmp_path / "repo")
    repo.first = repo.commit("initial", {"pyproject.toml": PYPROJECT, "Makefile": MAKEFILE, "config/dev.yaml": DEV_YAML,
                                         "AGENTS.md": "Use uv. Issue 5173 is flaky."})
    return repo


async def remember_facts(svc, repo):
    files = {}
    for name, path in (("src_pyproject", "pyproject.toml"), ("src_makefile", "Makefile"),
                       ("src_dev_yaml", "config/dev.yaml"), ("src_agents_md", "AGENTS.md")):
        files[name] = await svc.sources.persist(pc.ContentSource(name, repo.read(path), metadata={"path": path}))
    E = pc.MemoryEntryInput
    rev = await svc.remember(None, sources=tuple(files.values()), entries=(
        E("fact", FACT_BUILD, sources=(files["src_pyproject"],)),
        E("preference", FACT_DOCS, sources=(files["src_makefile"],)),
        E("fact", FACT_PORT, sources=(files["src_dev_yaml"],)),
        E("fact", FACT_ISSUE, sources=(files["src_agents_md"],)),  # mentions 5173, cites no changed path
        E("fact", FACT_TWICE, sources=(files["src_dev_yaml"],)),   # states 5173 twice: ambiguous
    ))
    return rev, {e.text: e for e in await svc.entries(rev)}


async def test_a_commit_that_changes_stated_facts_revises_exactly_those_entries(svc, repo):
    rev1, by_text = await remember_facts(svc, repo)
    head = repo.commit("switch backend, rename docs target, move port", {
        "pyproject.toml": PYPROJECT.replace('"hatchling.build"', '"setuptools.build_meta"').replace('["hatchling"]', '["setuptools>=69"]'),
        "Makefile": MAKEFILE.replace("docs-test:", "test-docs:"),
        "config/dev.yaml": DEV_YAML.replace("5173", "5174"),
    })
    change = await svc.sources.persist(git_change(repo.root, repo.first, head, repository="repo:demo"))
    assert change.metadata["paths"] == ["Makefile", "config/dev.yaml", "pyproject.toml"]
    rev2 = await svc.remember(rev1, sources=(change,), mode="extract")

    assert rev2.revision == 2 and {c.op for c in rev2.changes} == {"revise"}
    after = {e.entry_id: e for e in await svc.entries(rev2)}
    revised = {by_text[t].entry_id: after[by_text[t].entry_id].text for t in (FACT_BUILD, FACT_DOCS, FACT_PORT)}
    assert revised == {
        by_text[FACT_BUILD].entry_id: "powercontext uses uv to manage dependencies and setuptools to build.",
        by_text[FACT_DOCS].entry_id: "Validation convention: prefer make test-docs for documentation-only changes.",
        by_text[FACT_PORT].entry_id: "The dev server listens on port 5174.",
    }
    assert {c.entry_id for c in rev2.changes} == set(revised)
    reasons = {c.entry_id: c.reason for c in rev2.changes}
    assert reasons[by_text[FACT_PORT].entry_id] == f"git {head[:12]}: config/dev.yaml port 5173 -> 5174"
    assert reasons[by_text[FACT_BUILD].entry_id] == (
        f"git {head[:12]}: pyproject.toml build-backend hatchling.build -> setuptools.build_meta")
    port = after[by_text[FACT_PORT].entry_id]
    assert [s.name for s in port.sources] == ["src_dev_yaml", change.name] and port.version == 2
    # unlinked and ambiguous entries are untouched
    for text in (FACT_ISSUE, FACT_TWICE):
        assert after[by_text[text].entry_id].entry_version_id == by_text[text].entry_version_id

    # A later change of the same fact follows the chain: the entry now cites the
    # previous Git change, which is a Source for config/dev.yaml.
    head2 = repo.commit("port again", {"config/dev.yaml": DEV_YAML.replace("5173", "5175")})
    change2 = await svc.sources.persist(git_change(repo.root, head, head2))
    rev3 = await svc.remember(rev2, sources=(change2,), mode="extract")
    assert [(c.op, c.entry_id) for c in rev3.changes] == [("revise", port.entry_id)]
    assert (await svc.entry(rev3, port.entry_id)).text == "The dev server listens on port 5175."


async def test_a_commit_that_changes_no_stated_fact_is_a_noop_and_nothing_is_deactivated(svc, repo):
    rev1, by_text = await remember_facts(svc, repo)
    head = repo.commit("unrelated edits and a deleted target", {
        "pyproject.toml": PYPROJECT.replace('version = "0.1.0"', 'version = "0.2.0"'),
        "Makefile": MAKEFILE.replace("docs-test:\n\tuv run pytest docs\n\n", ""),  # the stated target disappears
        "config/dev.yaml": DEV_YAML.replace("# vite default", "# chosen by vite"),
    })
    change = await svc.sources.persist(git_change(repo.root, repo.first, head))
    same = await svc.remember(rev1, sources=(change,), mode="extract")
    assert same.ref == rev1.ref  # no candidate, no working note, no empty Revision
    assert len((await svc.head(rev1.artifact_id)).manifest.active) == 5
    head2 = repo.commit("delete the config", {"config/dev.yaml": None})
    gone = await svc.sources.persist(git_change(repo.root, head, head2))
    assert (await svc.remember(rev1, sources=(gone,), mode="extract")).ref == rev1.ref


async def test_git_change_sources_are_canonical_and_typed_after_a_round_trip(svc, repo):
    head = repo.commit("port", {"config/dev.yaml": DEV_YAML.replace("5173", "5174")})
    typed = git_change(repo.root, repo.first, head)
    src = await svc.sources.persist(typed)
    assert src.name == f"src_git_{repo.first[:12]}_{head[:12]}" and src.content == typed.patch
    assert pc.GitChangeSource.from_source(src) == typed
    assert await svc.sources.persist(git_change(repo.root, repo.first, "HEAD")) == src  # same bytes, same hash
    # repository config cannot change the evidence: the diff options are pinned
    repo.git("config", "diff.noprefix", "true")
    repo.git("config", "diff.mnemonicPrefix", "true")
    assert git_change(repo.root, repo.first, head).patch == typed.patch
    assert "--- a/config/dev.yaml\n+++ b/config/dev.yaml" in typed.patch
    with pytest.raises(pc.InvalidMemoryRequestError, match="rev-parse failed"):
        git_change(repo.root, "no-such-ref", head)
    with pytest.raises(pc.InvalidMemoryRequestError, match="full lowercase hexadecimal"):
        pc.GitChangeSource(name="x", base_commit="abc", head_commit=head, paths=(), patch="")
    limited = git_change(repo.root, repo.first, head, paths=["pyproject.toml"])
    assert limited.paths == () and limited.patch == ""
