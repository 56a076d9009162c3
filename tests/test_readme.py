"""The README is documentation users copy from: its Python blocks must run, and the
public names it and DESIGN.md promise must exist."""

import os
import re
import subprocess
import sys
from pathlib import Path

import powercontext as pc

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    first_block = text.split("```bash", 1)[1].split("```", 1)[0]
    assert "make eval" in first_block and "make test" in first_block


def test_readme_python_blocks_run(tmp_path):
    blocks = python_blocks()
    assert blocks
    for block in blocks[:1]:
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("fts 0.0164 ('fts',) Run make test before every push.\n")
        assert "deactivate" in done.stdout
    assert "1/61 = 0.0164" in README.read_text()  # the score it prints is explained next to it


def test_readme_vector_block_runs_as_pasted_and_finds_its_answer_in_both_modes(tmp_path, monkeypatch, capsys):
    """Verbatim, in this process (the model is already imported here, which saves ~10 s)."""
    (block,) = [b for b in python_blocks() if '"vectors.db"' in b]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    answer = "The data team approves schema changes before any migration runs."
    assert capsys.readouterr().out.splitlines() == [
        f"fts 0.0164 ('fts',) {answer}", f"hybrid 0.0328 ('fts', 'vector') {answer}"]
    readme = README.read_text()
    assert f"fts 0.0164 ('fts',) {answer}" in readme and f"hybrid 0.0328 ('fts', 'vector') {answer}" in readme


def test_readme_search_log_block_runs_as_pasted_and_prints_what_the_readme_shows(tmp_path):
    """The search-log tour (issue 44), verbatim in a fresh process; its output is quoted
    under it in the README."""
    (block,) = [b for b in python_blocks() if '"searchlog.db"' in b]
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "what must I run before a push? fts [(1, ('fts',))]\n" in done.stdout
    assert "fts matched 1/4 terms, needs 3" in done.stdout and done.stdout.endswith("1 record deleted\n")
    assert f"```\n{done.stdout}```" in README.read_text()


def test_public_entry_points_exist():
    for name in ("open", "ContentSource", "MemoryEntryInput", "AdmissionPolicy", "MemoryService",
                 "RevisionConflictError", "CapabilityNotSupportedError", "InvalidCitationError"):
        assert hasattr(pc, name), name


def test_every_magic_subcommand_is_in_the_readme():
    from powercontext.magics.magic import PcMem

    text = README.read_text()
    missing = [name for name in PcMem(shell=None).commands if f"%pcmem {name}" not in text]
    assert not missing, missing


def test_readme_patch_and_agent_view_block_runs(tmp_path):
    (block,) = [b for b in python_blocks() if "svc.patch(" in b]
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("patch offset=26 length=9 delta=+0: vite moved\n<untrusted-memory>\n")
    assert "port 5174; the API is proxied under /api." in done.stdout


def runnable_blocks() -> list[str]:
    """Every Python block that is a whole program (the OceanBase line is a fragment: it
    needs the URL a running server printed, and runs in test_seekdb's CLI test)."""
    return [b for b in python_blocks() if "asyncio.run(main())" in b or b.startswith("from powercontext.eval")]


def test_every_readme_snippet_runs_twice_in_one_folder(tmp_path):
    """Issue 36: re-running the Runtime snippet raised AttributeError ('NoneType' object
    has no attribute 'ref'): the second flush is idle. Pasting a snippet twice must work,
    and print the same lines again (ids aside)."""
    blocks = runnable_blocks()
    assert len(blocks) == len(python_blocks()) - 1

    def printed(block):
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert done.returncode == 0, (block[:200], done.stderr[-2000:])
        return re.sub(r"hash [0-9a-f]+", "hash H", re.sub(r"(mem_(art|ent|ver)_)\w{26}", r"\1ID", done.stdout))
    for block in blocks:
        first, second = printed(block), printed(block)
        if "PowerContextRuntime" in block:  # the second capture is the same payload: nothing new to flush
            assert first.splitlines()[:2] == ["1 True", "committed (0, 1]"]
            assert second.splitlines()[:2] == ["1 False", "idle None"]
            assert first.splitlines()[2] == second.splitlines()[2]  # the same head and entries: nothing duplicated
        else:
            assert first == second, block[:200]


def test_readme_e5_block_prints_what_the_readme_says(tmp_path, monkeypatch, capsys):
    """The multilingual block: the Chinese question finds the Chinese entry, the English
    paraphrase the pnpm entry, with E5's own default policy."""
    block, migration = [b for b in python_blocks() if '"multilingual.db"' in b]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out
    assert printed.splitlines()[-1] == "multilingual-e5-small-q4 floors+cross-script+coverage+hybrid-floors"
    assert printed in README.read_text()
    # the migration block after it, on the same file: there and back, with each model's default
    exec(compile(migration, "README.md", "exec"), {"__name__": "__main__"})
    moved = capsys.readouterr().out
    assert moved.splitlines() == [
        "multilingual-e5-small-q4 → minilm-l6-v2 3 entries; minilm-l6-v2",
        "minilm-l6-v2 → multilingual-e5-small-q4 3 entries; multilingual-e5-small-q4"]
    assert moved in README.read_text()


def test_readme_counts_of_the_bundled_corpora_are_the_files_counts():
    """The README quoted 1,174 queries while the files held 1,173 (issue 45)."""
    from powercontext.eval.corpora import datasets

    corpora = [datasets.load(path) for path in datasets.discover(README.parent / "datasets")]
    assert len(corpora) == 4
    memories = sum(len(c.memories) for c in corpora)
    queries = sum(len(c.queries) for c in corpora)
    assert f"`datasets/`: {memories:,} memories, {queries:,} labelled" in README.read_text()
