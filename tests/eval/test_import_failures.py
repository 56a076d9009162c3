"""Importers refuse broken input with one line and leave OUT as it was (issue 35,
defect 6): the corpus is written into a temporary folder and renamed into place at the
end, so a failure half way writes nothing, a re-run works, and ``--force`` leaves no
file of the previous corpus. Each case runs the real CLI, ``python -m
powercontext.eval import``, in-process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from powercontext.eval.__main__ import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LONGMEMEVAL = FIXTURES / "longmemeval" / "longmemeval_s.json"
BEIR = FIXTURES / "beir" / "minifact"


def _import(capsys, *argv) -> tuple[int, str]:
    """Exit code and stderr of the CLI; a traceback fails the test where it happens."""
    code = main(["import", *map(str, argv)])
    return code, capsys.readouterr().err


def _one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in words), err


def _longmemeval_with(tmp_path, question: str) -> Path:
    data = json.loads(LONGMEMEVAL.read_text(encoding="utf-8"))
    data[-1]["question"] = question
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(data), encoding="utf-8")  # ensure_ascii: the surrogate stays a \ud800 escape
    return path


def test_a_lone_surrogate_leaves_out_untouched_and_the_rerun_works(tmp_path, capsys):
    out = tmp_path / "out"
    code, err = _import(capsys, "longmemeval", _longmemeval_with(tmp_path, "What breed is my \ud800 dog?"), out)
    _one_line_error(code, err, "lone surrogate", "query")
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["longmemeval_s.json"], "nothing half-written"
    code, err = _import(capsys, "longmemeval", LONGMEMEVAL, out)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "memories.jsonl", "qrels.trec", "queries.jsonl"]


def test_force_replaces_the_whole_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert _import(capsys, "beir", BEIR, out)[0] == 0
    (out / "stale-notes.txt").write_text("from an earlier import")
    (out / "old").mkdir()
    code, err = _import(capsys, "longmemeval", LONGMEMEVAL, out, "--force")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "memories.jsonl", "qrels.trec", "queries.jsonl"]
    assert "longmemeval" in (out / "README.md").read_text().lower()
    assert [p.name for p in tmp_path.iterdir()] == ["out"], "no temporary folder is left beside OUT"
    code, err = _import(capsys, "beir", BEIR, out)
    _one_line_error(code, err, "not empty", "--force")


NOT_UTF8 = b"\xff\xfe caf\xe9 \x80"


@pytest.mark.parametrize("fmt, make", [
    ("locomo", lambda d: _write(d / "locomo10.json", NOT_UTF8)),
    ("longmemeval", lambda d: _write(d / "longmemeval_s.json", NOT_UTF8)),
    ("beir", lambda d: _beir(d, corpus=NOT_UTF8)),
    ("beir", lambda d: _beir(d, qrels=b"query-id\tcorpus-id\tscore\n1\t4983\t\xff1\n")),
    ("trec", lambda d: _trec(d, collection=b"d1\tcaf\xe9\n")),
])
def test_non_utf8_input_is_one_line(tmp_path, capsys, fmt, make):
    src = make(tmp_path / "src")
    code, err = _import(capsys, fmt, src, tmp_path / "out")
    _one_line_error(code, err, "not UTF-8")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "1e400"])
def test_beir_scores_that_are_no_integers_are_one_line(tmp_path, capsys, score):
    src = _beir(tmp_path / "src", qrels=f"query-id\tcorpus-id\tscore\n1\t4983\t{score}\n".encode())
    code, err = _import(capsys, "beir", src, tmp_path / "out")
    _one_line_error(code, err, "score", "integer")


def test_deeply_nested_json_is_one_line(tmp_path, capsys):
    src = _write(tmp_path / "locomo10.json", b"[" * 100_000 + b"]" * 100_000)
    code, err = _import(capsys, "locomo", src, tmp_path / "out")
    _one_line_error(code, err, "nested too deeply")


@pytest.mark.parametrize("shape", ["a file", "a dangling symlink", "under a file"])
def test_an_out_that_cannot_be_a_folder_is_one_line_and_stays(tmp_path, capsys, shape):
    blocker = tmp_path / "blocker"
    if shape == "a file":
        blocker.write_text("mine")
        out = blocker
    elif shape == "a dangling symlink":
        os.symlink(tmp_path / "nowhere", blocker)
        out = blocker
    else:
        blocker.write_text("mine")
        out = blocker / "sub" / "out"
    code, err = _import(capsys, "beir", BEIR, out)
    _one_line_error(code, err, str(blocker.name))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]
    if shape != "a dangling symlink":
        assert blocker.read_text() == "mine"


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _beir(folder: Path, corpus: bytes | None = None, qrels: bytes | None = None) -> Path:
    shutil.copytree(BEIR, folder)
    if corpus is not None:
        _write(folder / "corpus.jsonl", corpus)
    if qrels is not None:
        _write(folder / "qrels" / "test.tsv", qrels)
    return folder


def _trec(folder: Path, collection: bytes) -> Path:
    shutil.copytree(FIXTURES / "trec" / "sgml", folder)
    _write(folder / "collection.tsv", collection)
    return folder
