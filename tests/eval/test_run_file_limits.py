"""A hostile ``--run`` file (issue 43, item 5): one very long id is refused within
seconds and without holding the line, at its line number; NaN/infinite scores and a
(query, document) pair given twice are refused at their line, not accepted silently."""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc

import pytest

from powercontext.errors import PowerContextError
from powercontext.eval import harness
from powercontext.eval.__main__ import main
from powercontext.eval.errors import EvalError
from powercontext.eval.corpora.datasets import validate
from powercontext.eval.running.external import external_runs
from powercontext.eval.running.trecrun import RunFileError

from .fakes import write_corpus


@pytest.fixture
def tiny(tmp_path):
    return write_corpus(tmp_path / "datasets" / "tiny")


def _read(tiny, path):
    return external_runs({"x": path}, [validate(tiny)])


@pytest.mark.parametrize("length", [20_000, 1_000_000, 50_000_000])
def test_a_long_document_id_is_refused_in_seconds_without_holding_the_line(tiny, tmp_path, length):
    path = tmp_path / "long.trec"
    with open(path, "w") as fh:
        fh.write("tny-q001 Q0 tny-0001 1 2.0 x\n")
        fh.write("tny-q001 Q0 " + "d" * length + " 2 1.0 x\n")
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(RunFileError, match=r"long\.trec, line 2: longer than 4096 bytes") as info:
            _read(tiny, path)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 5, seconds
    assert peak < 4 << 20, peak  # the 50 MB line was never read whole
    assert isinstance(info.value, PowerContextError) and isinstance(info.value, EvalError)
    assert len(str(info.value)) < 300 and "\n" not in str(info.value)


def test_a_long_id_in_a_gzipped_run_is_refused_at_its_line(tiny, tmp_path):
    path = tmp_path / "long.run.gz"
    with gzip.open(path, "wt") as gz:  # 50 MB of one id is ~50 KB on disk
        gz.write("tny-q001 Q0 tny-0001 1 2.0 x\n" + "tny-q001 Q0 " + "d" * 50_000_000 + " 2 1.0 x\n")
    tracemalloc.start()
    try:
        with pytest.raises(RunFileError, match=r"line 2: longer than"):
            _read(tiny, path)
        assert tracemalloc.get_traced_memory()[1] < 4 << 20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("line, message", [
    ("tny-q001 Q0 " + "é" * 100 + " 2 1.0 x", "document id 'ééé"),  # not ASCII: not an id
    ("tny-q001 Q0 " + "d" * 129 + " 2 1.0 x", "is not an id (1..128 printable ASCII"),
    ("tny-q001 Q0 tny-0002 2 nan x", "score 'nan' is not a finite number"),
    ("tny-q001 Q0 tny-0002 2 NaN x", "score 'NaN' is not a finite number"),
    ("tny-q001 Q0 tny-0002 2 inf x", "score 'inf' is not a finite number"),
    ("tny-q001 Q0 tny-0002 2 -Infinity x", "score '-Infinity' is not a finite number"),
    ("tny-q001 Q0 tny-0002 2 high x", "score 'high' is not a number"),
    ("tny-q001 Q0 tny-0001 2 0.5 x", "query tny-q001 ranks document tny-0001 again (line 1 already did)"),
    ("tny-q001 Q0 tny-0002 2", "4 fields where a run line has 6"),
])
def test_a_bad_line_is_refused_with_its_number(tiny, tmp_path, line, message):
    path = tmp_path / "bad.trec"
    path.write_text("tny-q001 Q0 tny-0001 1 2.0 x\n" + line + "\ntny-q002 Q0 tny-0003 1 1.0 x\n")
    with pytest.raises(RunFileError) as info:
        _read(tiny, path)
    assert f"bad.trec, line 2: " in str(info.value) and message in str(info.value)


def test_bytes_that_are_not_text_are_refused_at_their_line(tiny, tmp_path):
    path = tmp_path / "bad.trec"
    path.write_bytes(b"tny-q001 Q0 tny-0001 1 2.0 x\n\n\xff\xfe\x00 Q0 tny-0002 1 1 x\n")
    with pytest.raises(RunFileError, match=r"line 3: not UTF-8 text"):
        _read(tiny, path)


def test_a_good_run_reads_the_same_plain_gzipped_and_as_json(tiny, tmp_path):
    lines = "tny-q001 Q0 tny-0003 1 2.0 x\ntny-q001 Q0 tny-0001 2 2.0 x\ntny-q002 Q0 tny-0009 1 -1.5 x\n\n"
    (tmp_path / "a.trec").write_text(lines)
    with gzip.open(tmp_path / "a.run.gz", "wt") as gz:
        gz.write(lines)
    (tmp_path / "a.json").write_text(json.dumps({"tny-q001": {"tny-0003": 2.0, "tny-0001": 2.0},
                                                 "tny-q002": {"tny-0009": -1.5}}))
    expected = {"tny-q001": ("tny-0001", "tny-0003"), "tny-q002": ("tny-0009",)}  # ties by document id
    for name in ("a.trec", "a.run.gz", "a.json"):
        assert _read(tiny, tmp_path / name) == {"x": expected}, name


@pytest.mark.parametrize("text, message", [
    ('{"tny-q001": {"tny-0001": 1.0, "tny-0001": 2.0}}', "the key 'tny-0001' is given twice"),
    ('{"tny-q001": {"tny-0001": NaN}}', "score nan is not a finite number"),
    ('{"tny-q001": {"tny-0001": true}}', "score None is not a number"),
    ('{"tny-q001": ["tny-0001"]}', "expected {query id: {document id: score}}"),
    ('{"tny-q001": {"tny-0001": 1.0', "not a ranx run (JSONDecodeError"),
])
def test_a_bad_json_run_is_refused_naming_what(tiny, tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(RunFileError) as info:
        _read(tiny, path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_the_cli_refuses_a_long_id_before_anything_runs(tiny, tmp_path, capsys):
    path = tmp_path / "long.trec"
    path.write_text("tny-q001 Q0 " + "d" * 1_000_000 + " 1 1.0 x\n")
    out = tmp_path / "run"
    start = time.perf_counter()
    assert main(["sweep", "--dataset", str(tiny), "--modes", "fts", "--out", str(out), "--run", f"bm25={path}"]) == 2
    assert time.perf_counter() - start < 20
    err = capsys.readouterr().err
    assert "long.trec, line 1: longer than 4096 bytes" in err and len(err) < 400 and not out.exists()
    with pytest.raises(RunFileError, match="no such run file"):
        harness.sweep(tiny, modes=("fts",), runs={"x": tmp_path / "missing.trec"}, out=out)
