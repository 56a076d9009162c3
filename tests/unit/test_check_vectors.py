"""check_vectors: check_vector's rules over a whole batch (issue 48: a 50k-entry load
checked every vector component by component, twice). Same values, same refusals, same
messages; and no Python call per vector."""

import math

import numpy as np
import pytest

from powercontext.embedding import MINILM_PROFILE, UNIT_NORM_TOLERANCE, check_vector, check_vectors
from powercontext.errors import InvalidEmbeddingError
from powercontext.model import EmbeddingProfile

from .calls import python_calls

DIM = MINILM_PROFILE.dimension


def unit_rows(n: int, seed: int = 3) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def one_by_one(vectors, profile=MINILM_PROFILE):
    return tuple(check_vector(v, profile) for v in vectors)


def refusal(fn, *args) -> str | None:
    try:
        fn(*args)
    except InvalidEmbeddingError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("form", ["tuples", "lists", "float32 arrays", "one array"])
def test_valid_batches_give_the_same_tuples_of_floats(form):
    rows = unit_rows(50)
    batch = {"tuples": [tuple(r) for r in rows.tolist()], "lists": rows.tolist(),
             "float32 arrays": list(rows.astype(np.float32)), "one array": rows}[form]
    got = check_vectors(batch, MINILM_PROFILE)
    assert got == one_by_one(batch)
    assert all(type(v) is tuple and all(type(x) is float for x in v) for v in got)


def near_tolerance(scale_off: float) -> list[float]:
    v = unit_rows(1)[0] * (1.0 + scale_off)
    return v.tolist()


@pytest.mark.parametrize("bad", [
    "nan", "inf", "short", "long", "not unit", "string", "ragged", "empty", "just over the tolerance",
])
def test_a_bad_vector_is_refused_with_check_vectors_own_message(bad):
    rows = [r for r in unit_rows(5).tolist()]
    if bad == "nan":
        rows[3][7] = math.nan
    elif bad == "inf":
        rows[2][0] = math.inf
    elif bad == "short":
        rows[1] = rows[1][:-1]
    elif bad == "long":
        rows = [r + [0.0] for r in rows]
    elif bad == "not unit":
        rows[4] = [2 * x for x in rows[4]]
    elif bad == "string":
        rows[0][0] = "not a number"
    elif bad == "ragged":
        rows[2] = rows[2][:10]
    elif bad == "empty":
        rows[0] = []
    elif bad == "just over the tolerance":
        rows[3] = near_tolerance(UNIT_NORM_TOLERANCE * 1.000001)
    expected = refusal(one_by_one, rows)
    assert expected is not None
    assert refusal(check_vectors, rows, MINILM_PROFILE) == expected


def test_norms_at_the_tolerance_are_decided_as_check_vector_decides_them():
    for off in (UNIT_NORM_TOLERANCE * (1 - 1e-7), UNIT_NORM_TOLERANCE * (1 + 1e-7), -UNIT_NORM_TOLERANCE * (1 - 1e-7),
                UNIT_NORM_TOLERANCE, -UNIT_NORM_TOLERANCE):
        rows = unit_rows(3).tolist() + [near_tolerance(off)]
        assert refusal(check_vectors, rows, MINILM_PROFILE) == refusal(one_by_one, rows), off


def test_a_profile_without_unit_normalization_takes_any_finite_norm():
    profile = EmbeddingProfile(**{**MINILM_PROFILE.to_canonical(), "normalization": "none"})
    rows = (unit_rows(4) * 3).tolist()
    assert check_vectors(rows, profile) == one_by_one(rows, profile)


def test_a_batch_is_checked_without_a_python_call_per_vector():
    rows = [tuple(r) for r in unit_rows(2000).tolist()]
    assert python_calls(check_vectors, rows, MINILM_PROFILE) < 100  # per vector, it was 2,000 check_vector calls and their generator


def test_numbers_given_as_strings_are_taken_as_check_vector_takes_them():
    rows = unit_rows(3).tolist()
    rows[1] = [repr(x) for x in rows[1]]
    assert check_vectors(rows, MINILM_PROFILE) == one_by_one(rows)
