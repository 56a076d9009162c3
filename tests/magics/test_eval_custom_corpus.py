"""`%pcmem eval --dataset DIR` on a researcher's own corpus: memory names, ids and
sources of its own, no kind/state/tags/split fields — nothing of the bundled corpora's
house style. The real harness runs (SQLite, every mode the installed model allows,
the real all-MiniLM-L6-v2), and the small corpus is cross-validated."""

from __future__ import annotations

import json

import pandas as pd

from .helpers import run

ENTRIES = [
    ("h-m001", "repoA", "The crate builds with cargo build --release and needs Rust 1.79.", ["Cargo.toml"]),
    ("h-m002", "repoA", "Integration tests need a running Postgres on port 5433.", ["README.md"]),
    ("h-m003", "repoA", "Releases are published to crates.io by the CI job on a tag push.", []),
    ("h-m004", "repoB", "The web app is deployed to Fly.io from the main branch.", ["fly.toml"]),
    ("h-m005", "repoB", "Frontend tests run with vitest; end-to-end tests with Playwright.", ["package.json"]),
    ("h-m006", "user", "Prefers answers in short bullet points.", []),
    ("h-m007", "user", "Works in the Europe/Berlin time zone.", []),
]
QUERIES = [
    ("h-q01", "How do I build the crate?", ["repoA"], {"h-m001": 2}),
    ("h-q02", "What do the integration tests need?", ["repoA"], {"h-m002": 2}),
    ("h-q03", "How are releases published?", ["repoA"], {"h-m003": 2}),
    ("h-q04", "Where is the web app deployed?", ["repoB"], {"h-m004": 2}),
    ("h-q05", "Which tool runs the end-to-end tests?", ["repoB"], {"h-m005": 2}),
    ("h-q06", "How should answers be formatted?", ["user"], {"h-m006": 1}),
    ("h-q07", "Which time zone is the user in?", ["user"], {"h-m007": 1}),
    ("h-q08", "Which Kubernetes namespace does billing use?", ["repoA", "repoB"], {}),
    ("h-q09", "What is the staging database password?", ["repoB"], {}),
    ("h-q10", "Which editor theme does the user like?", ["user"], {}),
]


def write_corpus(folder):
    folder.mkdir()
    with open(folder / "memories.jsonl", "w") as fh:
        for id_, memory, text, sources in ENTRIES:
            fh.write(json.dumps({"id": id_, "memory": memory, "text": text, **({"sources": sources} if sources else {})})
                     + "\n")
    with open(folder / "queries.jsonl", "w") as fh:
        for id_, text, memories, _ in QUERIES:
            fh.write(json.dumps({"id": id_, "text": text, "memories": memories}) + "\n")
    with open(folder / "qrels.trec", "w") as fh:
        for id_, _, _, judged in QUERIES:
            for entry, grade in judged.items():
                fh.write(f"{id_} 0 {entry} {grade}\n")
    return folder


def test_eval_magic_measures_a_custom_corpus(shell, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the harness's embedding cache, kept private
    folder = write_corpus(tmp_path / "my-corpus")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    # the quick grid: this checks the plumbing (modes, held-out columns), not the full grid
    capsys.readouterr()
    frame = run(shell, f"%pcmem eval --dataset {folder} --backends sqlite --quick --no-progress -o measured")
    assert isinstance(frame, pd.DataFrame) and shell.user_ns["measured"] is frame
    assert "stage " not in capsys.readouterr().err  # --no-progress reached the harness: no stage lines
    assert set(frame["backend"]) == {"sqlite"} and set(frame["mode"]) == {"fts", "vector", "hybrid"}
    recommended = frame[frame["policy"] == "recommended"]
    assert len(recommended) == 3
    # 10 queries: the recommendation is cross-validated and its held-out estimate is in the table
    assert recommended["heldout_ndcg@10"].between(0, 1).all() and recommended["heldout_false_admission"].notna().all()
    no_admission = frame[frame["policy"] == "no-admission"].set_index("mode")
    assert no_admission.loc["vector", "false_admission"] == 1.0  # a vector search always has candidates
    assert no_admission.loc["fts", "false_admission"] < 1.0  # full text needs a shared term
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # the corpus is read, never rewritten
