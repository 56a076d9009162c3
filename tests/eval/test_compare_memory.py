"""compare_embeddings keeps of a finished model only what the side-by-side reads:
a full `make eval` peaked in E5's analyse stage while MiniLM's replays were held."""

from __future__ import annotations

import gc

from powercontext.eval import harness
from powercontext.eval.scoring.sweep import Grid, Replay

from .fakes import HashEmbedding, write_corpus


def test_the_next_model_sweeps_without_the_first_models_replays(tmp_path, monkeypatch):
    tiny = write_corpus(tmp_path / "tiny")
    first, second = HashEmbedding(), HashEmbedding()
    first.name, second.name = "hash-a", "hash-b"
    sweep, alive = harness.asweep, []

    def replays_alive() -> int:
        gc.collect()
        return sum(issubclass(type(o), Replay) for o in gc.get_objects())  # type(): a dead weakproxy must not raise

    async def counting_sweep(*args, **options):
        alive.append(replays_alive())
        return await sweep(*args, **options)

    # a session fixture's sweep (tests/eval/conftest.py tiny_run) may hold its replays already
    before = replays_alive()
    monkeypatch.setattr(harness, "asweep", counting_sweep)
    tables, results = harness.compare_embeddings(
        tiny, [first, second], out=tmp_path / "cmp", backends=("sqlite",), modes=("vector",),
        grid=Grid((2,), (0.25,), (0.3, 0.5), (8, 10)), embedding_cache=tmp_path / "cache", write=False, folds=0,
        progress=False)
    assert alive == [before, before]  # the second model starts with no Replay of the first left in the process
    for result in results.values():  # what is kept: the tables the comparison reads, no replays or candidates
        assert result.replays == {} and result.collected.candidates.empty and result.sweep.empty
        assert len(result.summary) and len(result.per_query) and len(result.recommendations)
    assert len(tables["side_by_side"]) and len(tables["paired"])
    assert (tmp_path / "cmp" / "embeddings.md").exists()
