"""RuntimeStorage implementations that wrap a real profile to make one event
observable (the Runtime accepts any RuntimeStorage through assemble())."""

from __future__ import annotations

from powercontext.errors import BackendUnavailableError


class DelegatingStorage:
    """Forwards everything to a real storage; subclasses override one step."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.profile = inner.profile
        self.key = inner.key
        self.calls: list[str] = []

    def open_scope(self, scope):
        self.calls.append("open_scope")
        return self._scope(self.inner.open_scope(scope))

    def _scope(self, inner_scope):
        return inner_scope

    async def pending_scopes(self, trigger_name):
        self.calls.append("pending_scopes")
        return await self.inner.pending_scopes(trigger_name)

    async def progress(self, trigger_name):
        return await self.inner.progress(trigger_name)

    async def bindings(self):
        return await self.inner.bindings()

    async def probe(self):
        self.calls.append("probe")
        return await self.inner.probe()

    async def close(self):
        self.calls.append("close")
        await self.inner.close()


class _FlakyScope:
    def __init__(self, inner, owner) -> None:
        self._inner, self._owner = inner, owner
        self.scope = inner.scope

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def complete_window(self, *args, **kwargs):
        if self._owner.fail_next:
            self._owner.fail_next = False
            raise BackendUnavailableError("cursor save failed (simulated after the Memory commit)")
        return await self._inner.complete_window(*args, **kwargs)


class FlakyCursorStorage(DelegatingStorage):
    """Fails the next cursor save once, after the Memory commit already happened."""

    fail_next = False

    def _scope(self, inner_scope):
        return _FlakyScope(inner_scope, self)
