"""Role-aware embedding without a real model: which role reaches a model, the cache
keyed by role, and profile inference from a model folder's config. The embedders
here are deterministic test doubles (named as such); real models are exercised in
tests/conformance/test_profiles.py."""

import json

import pytest

from powercontext.embedding import EmbeddingResult, embed_checked, takes_role
from powercontext.errors import InvalidMemoryRequestError
from powercontext.eval.running.embedcache import CachingEmbedding
from powercontext.model import EmbeddingProfile
from powercontext.profiles import local_profile

PROFILE = EmbeddingProfile("test-roles-2", "test/deterministic-roles", 2)


class DeterministicAsymmetricEmbedder:
    """Test double: a query maps to (1, 0), a document to (0, 1); records each call."""

    profile = PROFILE

    def __init__(self):
        self.calls = []

    async def embed(self, texts, role="document"):
        self.calls.append((role, tuple(texts)))
        return EmbeddingResult(tuple((1.0, 0.0) if role == "query" else (0.0, 1.0) for _ in texts))


class DeterministicRolelessEmbedder:
    """Test double written against the RFC's ``embed(texts)``: symmetric by definition."""

    profile = PROFILE

    async def embed(self, texts):
        return EmbeddingResult(tuple((0.6, 0.8) for _ in texts))


async def test_the_role_reaches_a_role_aware_model_and_a_roleless_one_still_works():
    model = DeterministicAsymmetricEmbedder()
    assert await embed_checked(model, ["q"], PROFILE, role="query") == ((1.0, 0.0),)
    assert await embed_checked(model, ["d"], PROFILE) == ((0.0, 1.0),)
    assert model.calls == [("query", ("q",)), ("document", ("d",))]
    assert takes_role(model) and not takes_role(DeterministicRolelessEmbedder())
    assert await embed_checked(DeterministicRolelessEmbedder(), ["x"], PROFILE, role="query") == ((0.6, 0.8),)


async def test_an_unknown_role_is_refused():
    with pytest.raises(InvalidMemoryRequestError, match="role must be 'query' or 'document'"):
        await embed_checked(DeterministicAsymmetricEmbedder(), ["x"], PROFILE, role="passage")


async def test_the_cache_keys_include_the_role(tmp_path):
    model = DeterministicAsymmetricEmbedder()
    cache = CachingEmbedding(model, tmp_path)
    assert (await cache.embed(("same text",), role="query")).vectors == ((1.0, 0.0),)
    assert (await cache.embed(("same text",), role="document")).vectors == ((0.0, 1.0),)
    assert (await cache.embed(("same text",), role="query")).vectors == ((1.0, 0.0),)  # a hit, the query form
    assert len(model.calls) == 2 and cache.hits == 1
    assert ("same text", "query") in cache and "same text" in cache
    n = await cache.prefetch(["same text", "other"], queries=["same text", "a question"])
    assert n == 2 and model.calls[-2:] == [("document", ("other",)), ("query", ("a question",))]
    reopened = CachingEmbedding(DeterministicAsymmetricEmbedder(), tmp_path)
    assert list(reopened.vector("a question", "query")) == [1.0, 0.0]
    assert list(reopened.vector("other")) == [0.0, 1.0]


def _model_folder(tmp, modules, configs):
    tmp.mkdir()
    (tmp / "modules.json").write_text(json.dumps(modules))
    for path, config in configs.items():
        (tmp / path).mkdir(parents=True, exist_ok=True)
        (tmp / path / "config.json").write_text(json.dumps(config))
    return tmp


def test_a_dense_head_sets_the_inferred_dimension(tmp_path):
    folder = _model_folder(tmp_path / "My Model", [
        {"path": "", "type": "sentence_transformers.models.Transformer"},
        {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    ], {"": {"hidden_size": 768}, "1_Pooling": {"word_embedding_dimension": 768}, "2_Dense": {"out_features": 256}})
    profile = local_profile(folder, scripts="latin,cjk")
    assert profile.dimension == 256 and profile.scripts == ("latin", "cjk")
    assert profile.profile_id.startswith("local-my-model-") and profile.model == "local:My Model"
    (folder / "2_Dense" / "config.json").write_text(json.dumps({"out_features": 128}))
    assert local_profile(folder).profile_id != profile.profile_id  # another model, another profile


def test_bad_scripts_and_dimensionless_folders_are_refused(tmp_path):
    folder = _model_folder(tmp_path / "m", [{"path": "", "type": "x.Transformer"}], {})
    with pytest.raises(InvalidMemoryRequestError, match="does not declare an embedding dimension"):
        local_profile(folder)
    (folder / "config.json").write_text(json.dumps({"hidden_size": 32}))
    assert local_profile(folder).dimension == 32
    with pytest.raises(InvalidMemoryRequestError, match="scripts must name some of"):
        local_profile(folder, scripts=["klingon"])
