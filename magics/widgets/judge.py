"""JudgeWidget: judge a pool folder one question at a time (``%pcmem judge FOLDER``).

The candidates of a question come in a shuffled order seeded by the judge's name and
the question id — the same order after a restart, and never the pool's rank order —
with no channel shown until the question is judged (and only with ``show_channels``),
so neither rank nor channel sways the grade. Questions come in a seeded random order, the
same for every judge (``judging.order``: a fitted policy needs a representative sample —
judging the least certain first was measured to bias it); ``order="uncertainty"`` offers
the questions whose admission is least certain first, ``order="file"`` the folder's
order. Every click is a line appended and fsync'd
at once by the judge's JudgeWriter, which holds the judge name's lock while the widget
is open; a restarted kernel reads the file and resumes at the first question not judged.

Keys: ipywidgets has no key events, so a small "keys" box takes them: typing ``0``,
``1`` or ``2`` grades the marked candidate (and marks the next), ``n`` is "nothing here
answers it", ``s`` skip, ``j``/``k`` move the mark, ``>``/``<`` the next/previous question.

Stable CSS classes (what a browser test clicks): pcmem-judge-question, -progress, -card,
-grade (and -grade-0/1/2), -unanswerable, -skip, -prev, -next, -note, -note-save, -keys.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any, Optional

import ipywidgets as widgets

from powercontext.eval.judging.order import ORDERS, judging_order
from powercontext.eval.judging.judgments import (
    DEFAULT_JUDGE, Candidate, JudgeWriter, JudgingError, JudgmentLog, read_judgments, read_pool,
)

from ..display import esc
from ..errors import user_message
from ._base import STATUS_COLORS, StaticFallback

__all__ = ["JudgeWidget", "candidate_order"]

GRADE_LABELS = {0: "not relevant", 1: "partly answers it", 2: "answers it"}

#: One open widget per (folder, judge) in this kernel: judging the same folder again
#: replaces it instead of being refused by our own lock.
_OPEN: dict[tuple[str, str], "JudgeWidget"] = {}


def candidate_order(candidates: tuple[Candidate, ...], judge: str, query_id: str) -> list[Candidate]:
    """The judge's order of a question's candidates: shuffled, seeded by judge and question."""
    seed = int.from_bytes(hashlib.sha256(f"{judge}\0{query_id}".encode()).digest()[:8], "big")
    order = sorted(candidates, key=lambda c: c.entry_id)  # independent of pool.jsonl's rank order
    random.Random(seed).shuffle(order)
    return order


def _close_tree(widget: widgets.Widget) -> None:
    """Close a widget, its children and their layout and style models (separate widgets)."""
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        if isinstance(part, widgets.Widget):
            part.close()
    widget.close()


def _button(description: str, css: str, tooltip: str = "", **kwargs: Any) -> widgets.Button:
    button = widgets.Button(description=description, tooltip=tooltip, layout=widgets.Layout(width="auto"), **kwargs)
    button.add_class(css)
    return button


class JudgeWidget(StaticFallback, widgets.VBox):
    """``JudgeWidget(folder, judge="default", show_channels=False, order="sample")``.

    State: ``pool``, ``judgments`` (the judge's JudgmentLog, updated per click), ``query_id``
    (the question shown), ``order`` (its candidates as shown), ``cursor`` (the marked
    candidate for keys), ``status_line``. Actions: ``grade(position, g)``,
    ``nothing_answers()``, ``skip()``, ``save_note(text)``, ``go(query_id)``,
    ``next()``/``previous()``, ``press(keys)``, ``close()`` (releases the judge name)."""

    def __init__(self, folder: str | Path, judge: str = DEFAULT_JUDGE, show_channels: bool = False,
                 order: str = ORDERS[0]) -> None:
        super().__init__()
        if order not in ORDERS:
            raise JudgingError(f"judge: order must be one of {', '.join(ORDERS)}, got {str(order)[:40]!r}")
        pool = read_pool(folder)
        key = (str(pool.folder.resolve()), judge)
        if key in _OPEN:
            _OPEN.pop(key).close()
        self.pool, self.judge, self.show_channels = pool, judge, show_channels
        self.writer = JudgeWriter(pool, judge).open()
        _OPEN[key] = self
        self._key = key
        self.judgments: JudgmentLog = read_judgments(pool, judge)
        self.questions = [q.query_id for q in judging_order(pool.folder, by=order)]
        self.query_id: Optional[str] = None
        self.order: list[Candidate] = []
        self.cursor = 0
        self.status_line = ""
        self.status = widgets.HTML()
        self.progress = widgets.HTML()
        self.progress.add_class("pcmem-judge-progress")
        self.question = widgets.HTML()
        self.question.add_class("pcmem-judge-question")
        self.cards = widgets.VBox()
        self.unanswerable_button = _button("Nothing here answers it", "pcmem-judge-unanswerable",
                                           "an unanswerable question (key n)", icon="ban")
        self.skip_button = _button("Skip", "pcmem-judge-skip", "judge it later (key s)", icon="forward")
        self.prev_button = _button("◀ Previous", "pcmem-judge-prev", "previous question (key <)")
        self.next_button = _button("Next ▶", "pcmem-judge-next", "next question (key >)")
        self.note = widgets.Textarea(placeholder="a note on this question (saved with the button)",
                                     layout=widgets.Layout(width="95%"))
        self.note.add_class("pcmem-judge-note")
        self.note_button = _button("Save note", "pcmem-judge-note-save", icon="pencil")
        self.key_box = widgets.Text(placeholder="keys: 0 1 2 grade · n nothing answers · s skip · j/k move · < >",
                                 continuous_update=True, layout=widgets.Layout(width="95%"))
        self.key_box.add_class("pcmem-judge-keys")
        self.unanswerable_button.on_click(self._guard(lambda _b: self.nothing_answers()))
        self.skip_button.on_click(self._guard(lambda _b: self.skip()))
        self.prev_button.on_click(self._guard(lambda _b: self.previous()))
        self.next_button.on_click(self._guard(lambda _b: self.next()))
        self.note_button.on_click(self._guard(lambda _b: self.save_note(self.note.value)))
        self.key_box.observe(self._guard(self._typed), names="value")
        self.children = [
            self.progress, self.question, self.cards,
            widgets.HBox([self.unanswerable_button, self.skip_button, self.prev_button, self.next_button]),
            widgets.HBox([self.note, self.note_button]), self.key_box, self.status,
        ]
        left = self._left()
        self.go(left[0] if left else (self.questions[0] if self.questions else None))
        if self.writer.dropped:  # opening the writer cut it, so the reader no longer sees it
            self._say(self.writer.dropped, "error")

    # ------------------------------------------------------------------ actions

    def grade(self, position: int, grade: int) -> None:
        """Grade the candidate shown at ``position`` (0-based)."""
        candidate = self.order[position]
        self._save("graded", entry_id=candidate.entry_id, grade=grade)
        self.cursor = min(position + 1, len(self.order) - 1)
        self._after(f"graded {candidate.entry_id} {grade} ({GRADE_LABELS[grade]})")

    def nothing_answers(self) -> None:
        self._save("unanswerable")
        self._after("nothing here answers it: recorded as unanswerable")

    def skip(self) -> None:
        if self.query_id is None:
            return
        self._save("skip")
        skipped = self.query_id
        self._advance()
        self._say(f"skipped {skipped}", "done")

    def save_note(self, text: str) -> None:
        self._save("note", note=text)
        self._say("note saved", "done")

    def go(self, query_id: Optional[str]) -> None:
        self.query_id, self.cursor = query_id, 0
        if query_id is None:
            self.order = []
        else:
            self.order = candidate_order(self.pool.candidates[query_id], self.judge, query_id)
            st = self.judgments.states.get(query_id)
            self.note.value = (st.notes.get(None, "") if st else "")
            graded = st.grades if st else {}
            # keys resume where the judge stopped: the first candidate without a grade
            self.cursor = next((i for i, c in enumerate(self.order) if c.entry_id not in graded), 0)
        self.refresh()

    def next(self) -> None:
        self._step(+1)

    def previous(self) -> None:
        self._step(-1)

    def press(self, keys: str) -> None:
        """What typing ``keys`` into the keys box does."""
        for key in keys:
            if key in "012" and self.order:
                self.grade(self.cursor, int(key))
            elif key == "n":
                self.nothing_answers()
            elif key == "s":
                self.skip()
            elif key in "jk" and self.order:
                self.cursor = max(0, min(len(self.order) - 1, self.cursor + (1 if key == "j" else -1)))
                self.refresh()
            elif key in "<>":
                self._step(1 if key == ">" else -1)

    def close(self) -> None:
        """Release the judge name (another kernel may judge under it then)."""
        key = getattr(self, "_key", None)  # ipywidgets also closes on __del__, maybe of a half-built widget
        if key is not None and _OPEN.get(key) is self:
            del _OPEN[key]
        if getattr(self, "writer", None) is not None:
            self.writer.close()
        super().close()

    # ------------------------------------------------------------------ internals

    def _guard(self, callback):
        def handler(*args: Any) -> None:
            try:
                callback(*args)
            except Exception as exc:  # noqa: BLE001 - a user mistake is shown, a bug re-raised
                message = user_message(exc)
                if message is None:
                    self._say(f"failed: {type(exc).__name__} (a bug; the traceback is in the kernel log)", "error")
                    raise
                self._say(message, "error")
        return handler

    def _typed(self, change: dict) -> None:
        if change["new"]:
            self.key_box.value = ""  # each key acts once; the box stays empty for the next
            self.press(change["new"])

    def _save(self, outcome: str, **fields: Any) -> None:
        if self.query_id is None:
            return
        self.judgments.apply(self.writer.record(self.query_id, outcome, **fields))

    def _after(self, what: str) -> None:
        """After a grade or "nothing answers": a question now judged moves on to the next
        one not judged — unless its channels are to be shown, then it stays, revealed."""
        if self.judgments.judged(self.query_id) and not self.show_channels:
            done = self.query_id
            self._advance()
            self._say(f"{what}; {done} judged", "done")
            return
        self.refresh()
        self._say(what, "done")

    def _advance(self) -> None:
        left = [q for q in self._left() if q != self.query_id and not self.judgments.skipped(q)] or \
               [q for q in self._left() if q != self.query_id]
        after = [q for q in left if self.questions.index(q) > self.questions.index(self.query_id)]
        self.go((after or left or [None])[0])

    def _step(self, delta: int) -> None:
        if self.query_id is None:
            if self.questions:
                self.go(self.questions[0 if delta > 0 else -1])
            return
        index = self.questions.index(self.query_id) + delta
        if 0 <= index < len(self.questions):
            self.go(self.questions[index])

    def _left(self) -> list[str]:
        """The questions not judged yet, in this widget's judging order."""
        left = set(self.judgments.left)
        return [q for q in self.questions if q in left]

    def _say(self, message: str, kind: str) -> None:
        self.status_line = message
        self.status.value = (f"<span class='pcmem-status' data-kind='{kind}' style='color:{STATUS_COLORS[kind]}'>"
                             f"{esc(message)}</span>")

    def refresh(self) -> None:
        judged, total, left = len(self.judgments.judged_ids), len(self.questions), self._left()
        self.progress.value = (f"<b class='pcmem-judge-count'>{judged} / {total} questions judged</b> · judge "
                               f"<code>{esc(self.judge)}</code> · left: {esc(', '.join(left)) or 'nothing'}")
        if self.query_id is None:
            self.question.value = "<i>every question is judged</i>" if total else "<i>the pool has no questions</i>"
            self.cards.children = []
            return
        q = self.pool.questions[self.query_id]
        state = "judged" if self.judgments.judged(q.id) else ("skipped" if self.judgments.skipped(q.id) else "open")
        unans = " · <b>unanswerable</b>" if self.judgments.unanswerable(q.id) else ""
        self.question.value = (f"<div data-query-id='{esc(q.id)}' data-state='{state}'>Question "
                               f"{self.questions.index(q.id) + 1} of {total} (<code>{esc(q.id)}</code>, {state}{unans})"
                               f"<div dir='auto' style='font-size:1.2em;white-space:pre-wrap;overflow-wrap:anywhere'>"
                               f"{esc(q.text)}</div></div>")
        old, self.cards.children = self.cards.children, [self._card(i, c) for i, c in enumerate(self.order)]
        for card in old:  # every click redraws the cards: the replaced ones would live on in the kernel
            _close_tree(card)  # (and in a saved notebook's widget state) for the whole session

    def _revealed(self) -> bool:
        return self.show_channels and self.query_id is not None and self.judgments.judged(self.query_id)

    def _card_html(self, position: int, candidate: Candidate) -> str:
        entry = self.pool.entries[candidate.entry_id]
        grade = self.judgments.states.get(self.query_id).grades.get(candidate.entry_id) if self.query_id in self.judgments.states else None
        channels = ""
        if self._revealed():
            channels = (f"<div class='pcmem-judge-channels'>found by {esc(', '.join(candidate.sources))} · best rank "
                        f"{candidate.best_rank}</div>")
        border = "2px solid #1565c0" if position == self.cursor else "1px solid #ccc"
        return (f"<div class='pcmem-judge-card' data-entry-id='{esc(entry.id)}' data-grade='{'' if grade is None else grade}' "
                f"style='border:{border};padding:4px;margin:2px 0'>"
                f"<b>{position + 1}.</b> <code>{esc(entry.kind)}</code> · Memory <code>{esc(entry.memory)}</code>"
                f" · <code>{esc(entry.id)}</code>"
                f"<div dir='auto' style='white-space:pre-wrap;overflow-wrap:anywhere'>{esc(entry.text)}</div>"
                f"{channels}</div>")

    def _card(self, position: int, candidate: Candidate) -> widgets.Widget:
        st = self.judgments.states.get(self.query_id)
        current = st.grades.get(candidate.entry_id) if st else None
        buttons = []
        for g in (0, 1, 2):
            b = _button(str(g), "pcmem-judge-grade", f"{GRADE_LABELS[g]} (key {g})",
                        button_style="success" if current == g else "")
            b.add_class(f"pcmem-judge-grade-{g}")
            b.on_click(self._guard(lambda _b, p=position, g=g: self.grade(p, g)))
            buttons.append(b)
        return widgets.VBox([widgets.HTML(self._card_html(position, candidate)), widgets.HBox(buttons)])

    # ------------------------------------------------------------------ static view

    def headline(self) -> str:
        return (f"JudgeWidget({self.pool.folder.name}: judge {self.judge}, {len(self.judgments.judged_ids)} / "
                f"{len(self.questions)} judged, question {self.query_id})")

    def fallback_text(self) -> str:
        lines = [self.headline()]
        if self.query_id is not None:
            lines.append(self.pool.questions[self.query_id].text)
            for i, c in enumerate(self.order):
                e = self.pool.entries[c.entry_id]
                lines.append(f"{i + 1}. [{e.kind}] {e.memory} {e.id}: {e.text}")
        return "\n".join(lines)

    def fallback_html(self) -> str:
        # one candidate per table row: a static renderer (GitHub, nbconvert) draws them as a list
        cards = "".join(f"<tr><td>{self._card_html(i, c)}</td></tr>" for i, c in enumerate(self.order))
        return (f"<b>{esc(self.headline())}</b><div>{self.progress.value}</div>{self.question.value}"
                f"<table class='pcmem-table'><tbody>{cards}</tbody></table>"
                f"{self.status.value}")
