"""Both bundled embedding profiles on both databases: the RFC scenario searched in
hybrid mode with each profile's own default policy, role-aware embedding checked on
the stored vectors themselves (decision record 004), and a local model folder whose
sentence-transformers config defines prompts."""

import math
import os
from pathlib import Path

import pytest

import powercontext as pc
from powercontext import profiles
from powercontext.canonical import SequentialIds
from powercontext.embedding import minilm_path
from powercontext.errors import InvalidMemoryRequestError
from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

from .scenario import ENTRY_03C, revision_one, user_correction
from .test_vectors import DOCS

E = pc.MemoryEntryInput
RFC_QUESTION = "Which build and verification conventions should I know before editing documentation?"
QUESTION = "who has to approve schema changes"


def dot(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def same(a, b, tol=1e-4) -> bool:
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < tol


async def test_the_rfc_scenario_in_hybrid_mode_with_each_profiles_default(open_service, profile_model):
    svc = await open_service(embedding=profile_model, ids=SequentialIds())
    assert svc.policy == AdmissionPolicy.default_for(profile_model.profile)
    assert svc.policy.profile == profile_model.profile.profile_id
    sc = await revision_one(svc)
    r2 = await user_correction(svc, sc)
    v2 = await svc.entry(r2, sc.e02b.entry_id)
    res = await svc.search(RFC_QUESTION, memories=(r2,), mode="hybrid")
    assert res.mode == "hybrid"
    assert (res.hits[0].entry_id, res.hits[0].entry_version_id) == (sc.e02b.entry_id, v2.entry_version_id)
    r3 = await svc.forget(r2, entries=(sc.e03c,), reason="user_requested")
    gone = await svc.search("site generated output", memories=(r3,), mode="hybrid", policy=NO_ADMISSION)
    assert sc.e03c.entry_id not in {h.entry_id for h in gone}  # authoritative filtering, whatever admits
    r4 = await svc.reactivate(r3, entries=(sc.e03c,), reason="user_restored")
    back = await svc.search("site generated output", memories=(r4,), mode="hybrid")
    assert back.hits[0].text == ENTRY_03C


async def test_an_asymmetric_model_stores_documents_and_searches_with_queries(open_service, e5):
    """E5's two forms of one text differ; the stored vector must be the document
    ("passage: ") form, the search must compare the query ("query: ") form."""
    svc = await open_service(embedding=e5, ids=SequentialIds())
    rev = await svc.remember(None, entries=tuple(E("fact", d) for d in DOCS))
    stored = {}
    for entry in await svc.entries(rev):
        vector = svc.backend.stored_vector(entry.entry_version_id)
        (document,), (query_form,) = e5.encode([entry.text], "document"), e5.encode([entry.text], "query")
        assert same(vector, document)
        assert dot(document, query_form) < 0.995 and not same(vector, query_form)
        stored[entry.entry_id] = vector
    res = await svc.search(QUESTION, memories=(rev,), mode="vector", policy=NO_ADMISSION, explain=True)
    (as_query,), (as_document,) = e5.encode([QUESTION], "query"), e5.encode([QUESTION], "document")
    cosines = {d.candidate.entry_id: d.candidate.cosine for d in res.decisions}
    assert cosines.keys() == stored.keys()
    assert all(abs(cosines[k] - dot(as_query, stored[k])) < 1e-4 for k in cosines)
    assert max(abs(cosines[k] - dot(as_document, stored[k])) for k in cosines) > 1e-3


def _prompted_copy(folder: Path) -> Path:
    """all-MiniLM-L6-v2 with E5-style prompts in its sentence-transformers config: a
    real local model folder whose query and document forms differ."""
    source = Path(minilm_path())
    folder.mkdir()
    for item in source.iterdir():
        if item.name != "config_sentence_transformers.json":
            os.symlink(item, folder / item.name)
    (folder / "config_sentence_transformers.json").write_text(
        '{"prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": null}', encoding="utf-8")
    return folder


async def test_a_local_model_folder_opens_with_an_inferred_profile_and_its_prompts(open_service, tmp_path, minilm):
    folder = _prompted_copy(tmp_path / "minilm-prompted")
    svc = await open_service(embedding=str(folder), ids=SequentialIds())
    profile = svc.backend.embedding_profile
    assert profile.profile_id.startswith("local-minilm-prompted-") and profile.dimension == 384
    assert profile == profiles.local_profile(folder) != minilm.profile
    assert svc.policy.profile is None  # no calibration is known for this model
    rev = await svc.remember(None, entries=(E("fact", DOCS[1]),))
    (entry,) = await svc.entries(rev)
    raw = minilm._load()  # the same weights without prompts: the prefix is added by hand here
    (expected,) = raw.encode(["passage: " + DOCS[1]], normalize_embeddings=True).tolist()
    (plain,) = raw.encode([DOCS[1]], normalize_embeddings=True).tolist()
    stored = svc.backend.stored_vector(entry.entry_version_id)
    assert same(stored, expected, 1e-5) and not same(stored, plain, 1e-3)
    res = await svc.search(QUESTION, memories=(rev,), mode="vector", policy=NO_ADMISSION, explain=True)
    (question,) = raw.encode(["query: " + QUESTION], normalize_embeddings=True).tolist()
    assert abs(res.decisions[0].candidate.cosine - dot(question, stored)) < 1e-4


@pytest.mark.parametrize("bad", ["not-a-model", "/nonexistent/model/folder", 5, ["e5"]])
def test_what_is_not_a_model_is_refused_in_one_line(bad, tmp_path):
    with pytest.raises(InvalidMemoryRequestError) as info:
        profiles.resolve(bad)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_a_folder_that_is_not_a_model_is_refused_before_anything_is_created(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("not a model", encoding="utf-8")
    import asyncio

    with pytest.raises(InvalidMemoryRequestError, match="not a sentence-transformers model folder"):
        asyncio.run(pc.open(str(tmp_path / "memory.db"), embedding=str(tmp_path / "notes")))
    assert not (tmp_path / "memory.db").exists()


async def test_a_policy_tuned_for_one_profile_is_refused_on_another(open_service, e5):
    svc = await open_service(embedding=e5, ids=SequentialIds())
    rev = await svc.remember(None, entries=tuple(E("fact", d) for d in DOCS))
    minilm_default = AdmissionPolicy.default_for("minilm")
    with pytest.raises(InvalidMemoryRequestError, match="tuned for the embedding profile 'minilm-l6-v2'"):
        await svc.search(QUESTION, memories=(rev,), mode="hybrid", policy=minilm_default)
    # full text reads no vector: any policy applies
    assert (await svc.search("database migrations reviewed", memories=(rev,), mode="fts", policy=minilm_default)).hits
    # the explicit override
    overridden = await svc.search(QUESTION, memories=(rev,), mode="hybrid", policy=minilm_default.with_profile(e5.profile))
    assert overridden.mode == "hybrid"


def test_default_for_names_each_bundled_profile():
    from powercontext.bundled import E5_PROFILE, MINILM_PROFILE

    assert AdmissionPolicy.default_for("minilm") == AdmissionPolicy.default_for(MINILM_PROFILE)
    assert AdmissionPolicy.default_for("e5") == AdmissionPolicy.default_for(E5_PROFILE.profile_id)
    assert AdmissionPolicy.default_for("e5").profile == E5_PROFILE.profile_id
    assert AdmissionPolicy.default_for(None) == AdmissionPolicy()
    saved = AdmissionPolicy.from_dict(AdmissionPolicy.default_for("e5").to_dict())
    assert saved.profile == E5_PROFILE.profile_id
    assert not math.isnan(saved.vector_min_cosine)
