"""What every widget shares: the service, the private-loop runner, a one-line status,
and a static fallback of the widget's current table.

Widget callbacks run in the kernel thread, whose event loop is busy running the
kernel; the service's coroutines therefore run on the private loop of
``powercontext.loop`` and the callback waits for them, exactly like a magic.
"""

from __future__ import annotations

from typing import Any, Awaitable, ClassVar, TypeVar

import ipywidgets as widgets
import pandas as pd

from ..display import esc
from ..errors import user_message
from powercontext.loop import LoopRunner, default_runner

T = TypeVar("T")


def frame_text(frame: pd.DataFrame, empty: str = "(no rows)") -> str:
    """A DataFrame as fixed-width text, whole (no column or row elision), for a repr."""
    if frame is None or frame.empty:
        return empty
    return frame.to_string(index=False, max_rows=None, max_cols=None, max_colwidth=None)


class StaticFallback:
    """Mixin for a widget: besides its live view, the display bundle carries the
    widget's current table as ``text/plain`` and ``text/html``.

    A live front end draws the view; a static renderer without widget support
    (GitHub, ``nbconvert`` without the widget state, a terminal) shows the table
    instead of ``Widget(children=(HBox(…``. Subclasses give ``headline()`` (one line,
    also the ``repr``) and ``fallback_html()``, and ``fallback_text()`` unless the
    headline over ``self.frame`` is the whole story; both must be
    deterministic for the same state, because nbval compares them.

    ``static_fallback = False`` keeps ipywidgets' own display for a class whose stored
    notebook outputs predate the fallback (nbval would see new output fields)."""

    static_fallback: ClassVar[bool] = True

    def headline(self) -> str:
        raise NotImplementedError

    def fallback_text(self) -> str:
        """The headline over the widget's ``frame`` (what a one-table widget shows)."""
        return f"{self.headline()}\n{frame_text(self.frame)}"  # type: ignore[attr-defined]

    def fallback_html(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        if not self.static_fallback:
            return super().__repr__()
        try:
            return self.headline()
        except AttributeError:  # asked while __init__ is still building the controls
            return f"{type(self).__name__}(…)"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}  # type: ignore[misc]  # the live view, if any
        if not self.static_fallback:
            return bundle
        bundle["text/plain"] = self.fallback_text()
        bundle["text/html"] = f"<div class='pcmem-widget'>{self.fallback_html()}</div>"
        return bundle


class ServiceWidget(StaticFallback, widgets.VBox):
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
