"""Hostile arguments for every public entry point, derived from its signature (issue 35).

``calls(target, valid)`` is a hypothesis strategy of ``(name, kwargs)`` for every public
method of ``target`` (or for one callable): each parameter is left out (when it has a
default), given a value from ``valid`` (by parameter name, so calls reach past the first
check), or given a hostile value — wrong types, huge, surrogates, NaN, nested, None. A
method added later is covered by default: it is found by introspection, and any
parameter name nobody registered still gets the hostile values.

``Ledger`` runs the calls and keeps the books: calls made, typed refusals, raw
exceptions (any that is not a ``PowerContextError``), messages that quote too much.
"""

from __future__ import annotations

import inspect
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from hypothesis import strategies as st

from powercontext.errors import MAX_MESSAGE_CHARS, PowerContextError

#: A distinctive huge string: a message may quote a little of it, never a run of QUOTED.
HUGE = "\u01c2" * 1_000_000
QUOTED = 450  # 'a few hundred characters of quoted input' (the cap keeps 400 + 150)


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


HOSTILE: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**63, -(2**63) - 1, 10**100, 1.5, -0.0, math.nan, math.inf, -math.inf,
    "", " ", "\x00", "\ud800", "a\udfffb", "-1", "nan", "1e400", "../../etc/passwd", "mem_art_ghost", "mem_art_ghost@1",
    HUGE, b"bytes", bytearray(b"\xff"), [], [None], [HUGE], ["\ud800"], (), (1, 2, 3), {}, {"k": math.nan},
    {"\ud800": 1}, {1: 2}, _nested(400), _nested(400, HUGE), object(), Path("\x00"), range(3), iter([1]),
)
hostile = st.one_of(
    st.sampled_from(HOSTILE), st.integers(), st.floats(), st.text(max_size=12),
    st.lists(st.sampled_from(HOSTILE), max_size=3), st.dictionaries(st.text(max_size=4), st.sampled_from(HOSTILE), max_size=2),
)

OMIT = object()


def public_methods(target: Any, skip: Iterable[str] = ()) -> dict[str, Callable]:
    """Every public method (sync or async) of ``target``: what a user can call."""
    out = {}
    for name in dir(target):
        if name.startswith("_") or name in skip:
            continue
        member = getattr(target, name)
        if callable(member) and not inspect.isclass(member):
            out[name] = member
    return out


def arguments(fn: Callable, valid: Mapping[str, Callable[[], list]]) -> st.SearchStrategy[dict]:
    """Keyword arguments for ``fn`` from its signature: half the draws make one parameter
    hostile and give every other a valid value (or leave it out), so each check of each
    parameter is reached; the other half mix hostile, valid and missing freely."""
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_POSITIONAL]

    def good(p: inspect.Parameter) -> list[st.SearchStrategy]:
        out = [st.sampled_from(valid[p.name]())] if p.name in valid else []
        if p.default is not p.empty:
            out.append(st.just(OMIT))
        return out or [hostile]

    def field(p: inspect.Parameter, bad: bool) -> st.SearchStrategy:
        if p.kind is p.VAR_KEYWORD:
            extra = st.tuples(st.sampled_from(["pipeline", "bogus", "ids", "policy"]), hostile)
            return extra if bad else st.just(OMIT)
        options = [hostile] if bad else good(p)
        return st.sampled_from(range(len(options))).flatmap(options.__getitem__)

    def mixed(p: inspect.Parameter) -> st.SearchStrategy:
        if p.kind is p.VAR_KEYWORD:
            return st.one_of(field(p, True), field(p, False))
        options = [hostile, *good(p) * 3]  # three in four draws valid: calls get past their first check
        return st.sampled_from(range(len(options))).flatmap(options.__getitem__)

    def one_bad(target: int) -> st.SearchStrategy[dict]:
        return st.fixed_dictionaries({p.name: field(p, i == target) for i, p in enumerate(params)})

    free = st.fixed_dictionaries({p.name: mixed(p) for p in params})
    strategies = [free] + ([st.sampled_from(range(len(params))).flatmap(one_bad)] if params else [])

    def build(values: dict) -> dict:
        kwargs = {}
        for p in params:
            value = values[p.name]
            if value is OMIT:
                continue
            if p.kind is p.VAR_KEYWORD:
                kwargs[value[0]] = value[1]
            else:
                kwargs[p.name] = value
        return kwargs

    return st.one_of(*strategies).map(build)


def calls(methods: Mapping[str, Callable], valid: Mapping[str, Callable[[], list]]) -> st.SearchStrategy:
    """``(name, kwargs)`` over every method."""
    return st.sampled_from(sorted(methods)).flatmap(
        lambda name: st.tuples(st.just(name), arguments(methods[name], valid)))


#: The lone surrogates every string parameter is given in turn (issue 43, item 12): a
#: high and a low one, alone and inside text (JSON's ``\ud800`` escape decodes to one).
SURROGATES: tuple[str, ...] = ("\ud800", "a\udfffb")


def with_surrogate(value: Any) -> list[Any]:
    """``value`` with a lone surrogate spliced in, as many ways as its type allows: a
    string (at its end, so a path or a name passes every check before the encoding),
    a path, or a sequence holding strings. [] for any other value."""
    if isinstance(value, str):
        return [value + "\ud800", value[: len(value) // 2] + "\udfff" + value[len(value) // 2:]]
    if isinstance(value, Path):
        return [Path(str(value) + "\ud800")]
    if isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value):
        return [type(value)(v + "\ud800" if isinstance(v, str) else v for v in value)]
    return []


def surrogate_calls(fn: Callable, valid: Mapping[str, Callable[[], list]],
                    lift: Callable[[Any], list[Any]] = with_surrogate) -> list[dict]:
    """Keyword arguments for ``fn`` that give each parameter in turn a lone surrogate
    (alone, and spliced into each of its valid values, so the call gets past the checks
    before the one that encodes), every other parameter its first valid value or its
    default. Not drawn at random: every string parameter of every entry point gets one.
    ``lift`` splices into a valid value (a caller's deferred values need their own)."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def base(p: inspect.Parameter) -> Any:
        if p.name in valid and valid[p.name]():
            return valid[p.name]()[0]
        return OMIT if p.default is not p.empty else SURROGATES[0]

    out = []
    for target in params:
        values = list(SURROGATES) + [bad for good in (valid[target.name]() if target.name in valid else [])
                                     for bad in lift(good)]
        for value in values:
            kwargs = {p.name: (value if p is target else base(p)) for p in params}
            out.append({k: v for k, v in kwargs.items() if v is not OMIT})
    return out


def describe(kwargs: Mapping[str, Any]) -> str:
    def short(v: Any) -> str:
        try:
            text = repr(v)
        except Exception:  # noqa: BLE001
            text = f"<{type(v).__name__}>"
        return text if len(text) <= 60 else text[:60] + "…"

    return ", ".join(f"{k}={short(v)}" for k, v in kwargs.items())


def tree(root: Path) -> set[str]:
    """Every path under ``root`` (names only): what a refused call must not change."""
    out = set()
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            out.add(os.path.relpath(os.path.join(folder, name), root))
    return out


@dataclass
class Ledger:
    """The books of one fuzz run."""

    label: str
    calls: Counter = field(default_factory=Counter)
    typed: Counter = field(default_factory=Counter)
    raw: list[str] = field(default_factory=list)
    long_messages: list[str] = field(default_factory=list)
    written_on_refusal: list[str] = field(default_factory=list)
    surrogates: int = 0  # calls of the systematic lone-surrogate pass (surrogate_calls)

    def refused(self, name: str, kwargs: Mapping[str, Any], exc: BaseException, allowed: tuple = ()) -> None:
        """Book an exception: typed (checked for its length), or raw."""
        if isinstance(exc, PowerContextError) or isinstance(exc, allowed):
            self.typed[name] += 1
            message = str(exc)
            limit = getattr(exc, "max_message_chars", MAX_MESSAGE_CHARS) or 20_000
            if len(message) > limit + 100 or HUGE[:QUOTED] in message:
                self.long_messages.append(f"{name}({describe(kwargs)}): {type(exc).__name__} of {len(message)} chars")
            return
        self.raw.append(f"{name}({describe(kwargs)}): {type(exc).__name__}: {str(exc)[:200]}")

    def wrote(self, name: str, kwargs: Mapping[str, Any], what: str) -> None:
        self.written_on_refusal.append(f"{name}({describe(kwargs)}): {what}")

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def summary(self) -> str:
        return (f"[{self.label}] {self.total} calls over {len(self.calls)} entry points "
                f"({self.surrogates} with a lone surrogate), "
                f"{sum(self.typed.values())} typed refusals, {len(self.raw)} raw exceptions, "
                f"{len(self.long_messages)} over-long messages, {len(self.written_on_refusal)} writes on refusal")

    def check(self, expected: Iterable[str]) -> None:
        missing = sorted(set(expected) - set(self.calls))
        problems = self.raw + self.long_messages + self.written_on_refusal
        assert not missing, f"entry points never called: {missing}"
        assert not problems, self.summary() + "\n" + "\n".join(sorted(set(problems))[:60])


# ---------------------------------------------------------------------------- command lines

#: Hostile words for a command line (argv items are strings).
HOSTILE_WORDS: tuple[str, ...] = (
    "", " ", "-", "--", "-1", "0", "1e400", "nan", "inf", "\ud800", "a\udfffb", "nul\x00", "x" * 100_000, "中文",
    "a b", "'", '"', "{}", "[]", '{"type": 1}', "null", "fact:", ":", "@", "mem_art_ghost@99999999999999999999999",
    "../../etc/passwd", "/dev/null", "--bogus", "-o", "9" * 40,
)
hostile_word = st.one_of(st.sampled_from(HOSTILE_WORDS), st.text(max_size=8))


def command_lines(parser, valid: Mapping[str, list[str]], skip: Iterable[str] = ()) -> st.SearchStrategy[list[str]]:
    """argv for an argparse parser, derived from its actions: each option given or not,
    with a valid value (by its dest) or a hostile word; positionals likewise. Options
    in ``skip`` are never given (the fuzz must not start servers)."""
    import argparse

    skip = set(skip)

    def value(dest: str) -> st.SearchStrategy[str]:
        options = [hostile_word] + ([st.sampled_from(valid[dest])] * 3 if dest in valid else [])
        return st.sampled_from(range(len(options))).flatmap(options.__getitem__)

    parts = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or set(action.option_strings) & skip:
            continue
        if action.option_strings:
            flag = st.sampled_from(action.option_strings)
            if action.nargs == 0:
                parts.append(st.one_of(st.just([]), flag.map(lambda f: [f])))
            else:
                given = st.tuples(flag, st.lists(value(action.dest), min_size=1, max_size=2)).map(lambda t: [t[0], *t[1]])
                parts.append(st.one_of(st.just([]), given))
        else:
            low = 0 if action.nargs in ("?", "*", argparse.REMAINDER) else 1
            high = 1 if action.nargs in (None, "?") else 3
            parts.append(st.lists(value(action.dest), min_size=low, max_size=high))
    if not parts:
        return st.just([])
    return st.tuples(*parts).map(lambda groups: [word for group in groups for word in group])


def surrogate_lines(parser, valid: Mapping[str, list[str]], skip: Iterable[str] = ()) -> list[list[str]]:
    """argv for an argparse parser that give each positional and each option taking a
    value, in turn, a lone surrogate (alone, and after its first valid word), every
    other positional its first valid word: the systematic pass ``command_lines`` draws
    only by chance."""
    import argparse

    skip = set(skip)
    actions = [a for a in parser._actions
               if not isinstance(a, argparse._HelpAction) and not set(a.option_strings) & skip]
    positionals = [a for a in actions if not a.option_strings]

    def word(action) -> list[str]:
        if action.nargs in ("?", "*", argparse.REMAINDER) or action.dest not in valid:
            return []
        return [valid[action.dest][0]]

    lines = []
    for target in actions:
        if target.option_strings and target.nargs == 0:
            continue
        good = valid.get(target.dest, [])[:1]
        for bad in [*SURROGATES, *(g + "\ud800" for g in good)]:
            if target.option_strings:
                lines.append([w for p in positionals for w in word(p)] + [target.option_strings[0], bad])
            else:
                lines.append([w for p in positionals for w in ([bad] if p is target else word(p))])
    return lines
