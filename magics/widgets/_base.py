"""What every widget shares: the service, the private-loop runner, a one-line status.

Widget callbacks run in the kernel thread, whose event loop is busy running the
kernel; the service's coroutines therefore run on the private loop of
``powercontext.loop`` and the callback waits for them, exactly like a magic.
"""

from __future__ import annotations

from typing import Any, Awaitable, TypeVar

import ipywidgets as widgets

from ..display import esc
from ..errors import user_message
from powercontext.loop import LoopRunner, default_runner

T = TypeVar("T")


class ServiceWidget(widgets.VBox):
    """A VBox bound to a MemoryService. ``call`` runs a coroutine; a user mistake (a
    missing capability, an unknown Memory …) shows in ``status`` instead of raising."""

    def __init__(self, svc: Any, runner: LoopRunner | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.svc = svc
        self.runner = runner or default_runner()
        self.status = widgets.HTML(value="")
        self.error: str | None = None

    def run(self, awaitable: Awaitable[T]) -> T:
        return self.runner.run(awaitable)

    def call(self, awaitable: Awaitable[T]) -> T | None:
        try:
            result = self.run(awaitable)
        except Exception as exc:  # noqa: BLE001 - user mistakes shown, bugs re-raised
            message = user_message(exc)
            if message is None:
                raise
            self.show_error(message)
            return None
        self.show_error(None)
        return result

    def show_error(self, message: str | None) -> None:
        self.error = message
        self.status.value = f"<span style='color:#b00020'>{esc(message)}</span>" if message else ""
