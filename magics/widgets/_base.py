"""What every widget shares: the service, the private-loop runner, a one-line status,
and a static fallback of the widget's current table.

Widget callbacks run in the kernel thread, whose event loop is busy running the
kernel; the service's coroutines therefore run on the private loop of
``powercontext.loop`` and the callback waits for them, exactly like a magic.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, ClassVar, TypeVar

import ipywidgets as widgets
import pandas as pd

from powercontext.errors import ServiceClosedError
from powercontext.loop import LoopRunner, default_runner
from powercontext.runtime.errors import RuntimeClosedError

from ..display import esc
from ..errors import first_line, user_message

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


#: A service or Runtime that was closed (``%pcmem close``, ``%pcmem runtime close``).
CLOSED: tuple[type[BaseException], ...] = (ServiceClosedError, RuntimeClosedError)
STATUS_COLORS = {"error": "#b00020", "done": "#1b5e20"}


class ServiceWidget(StaticFallback, widgets.VBox):
    """A VBox bound to a MemoryService. Every action ends in a one-line ``status``: what
    it did, or why it could not. ``call`` runs a coroutine; a user mistake (a missing
    capability, an unknown Memory, a closed service …) shows in ``status`` instead of
    raising. ``action(callback)`` wraps a button or observer callback the same way:
    an exception in a callback would otherwise land in the kernel log, unseen.

    ``reopen`` says how to get a live widget back once the service was closed (the
    magics pass the exact ``%pcmem`` lines)."""

    def __init__(self, svc: Any, runner: LoopRunner | None = None, *, reopen: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.svc = svc
        self.runner = runner or default_runner()
        self.reopen = reopen or "pc.open(…), then create this widget again"
        self.status = widgets.HTML(value="")
        self.status_line = ""
        self.error: str | None = None

    def run(self, awaitable: Awaitable[T]) -> T:
        return self.runner.run(awaitable)

    def call(self, awaitable: Awaitable[T]) -> T | None:
        try:
            result = self.run(awaitable)
        except Exception as exc:  # noqa: BLE001 - user mistakes shown, bugs re-raised
            self.fail(exc)
            return None
        self.show_error(None)
        return result

    def action(self, callback: Callable[..., Any]) -> Callable[..., None]:
        """``callback`` for ``on_click``/``observe``: its failure becomes the status line."""
        def handler(*args: Any) -> None:
            try:
                callback(*args)
            except Exception as exc:  # noqa: BLE001 - shown; fail() re-raises bugs
                self.fail(exc)
        return handler

    def fail(self, exc: BaseException) -> None:
        """Show why an action failed; a bug is shown too and then re-raised (its
        traceback goes to the kernel log)."""
        if isinstance(exc, CLOSED):
            self.show_error(f"service closed — reopen with {self.reopen}")
            return
        message = user_message(exc)
        if message is None:
            self.show_error(f"failed: {type(exc).__name__}: {first_line(exc)} (a bug; the traceback is in the kernel log)")
            raise exc
        self.show_error(message)

    def show_error(self, message: str | None) -> None:
        self.error = message
        self._show(message or "", "error")

    def show_done(self, message: str) -> None:
        """The outcome of an action that worked (clears a previous error)."""
        self.error = None
        self._show(message, "done")

    def _show(self, message: str, kind: str) -> None:
        self.status_line = message
        self.status.value = (f"<span class='pcmem-status' data-kind='{kind}' style='color:{STATUS_COLORS[kind]}'>"
                             f"{esc(message)}</span>") if message else ""
