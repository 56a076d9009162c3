"""Shared fixtures. The ``svc`` fixture is parametrized over every database the
project supports, so each conformance test runs against all of them."""

from __future__ import annotations

import itertools

import pytest

import powercontext as pc
from powercontext.canonical import IdMinter

BACKENDS = ["sqlite"]


class ReadableIds(IdMinter):
    """Deterministic, readable ids for tests (the service validates them like any)."""

    def __init__(self, tag: str = "") -> None:
        self._n = itertools.count(1)
        self.tag = tag

    def _next(self, prefix: str) -> str:
        return f"{prefix}{self.tag}{next(self._n):04d}"

    def artifact_id(self) -> str:
        return self._next("mem_art_")

    def entry_id(self) -> str:
        return self._next("mem_ent_")

    def entry_version_id(self) -> str:
        return self._next("mem_ver_")


@pytest.fixture(params=BACKENDS)
def backend_name(request) -> str:
    return request.param


@pytest.fixture
async def open_service(backend_name, tmp_path):
    """A factory: ``await open_service(**service_options)`` → a fresh service on a
    fresh database of the parametrized backend. Closed at teardown."""
    opened = []

    async def factory(**options):
        if backend_name == "sqlite":
            svc = await pc.open(str(tmp_path / f"memory{len(opened)}.db"), **options)
        else:  # pragma: no cover - filled in by the OceanBase fixture
            raise AssertionError(backend_name)
        opened.append(svc)
        return svc

    yield factory
    for svc in opened:
        await svc.close()


@pytest.fixture
async def svc(open_service):
    return await open_service(ids=ReadableIds())
