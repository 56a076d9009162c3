"""Patch-style edits of one entry (decision record 004, P2, adapted to entries and
Revisions).

An agent that must reproduce a whole entry to change one word risks dropping the
rest, so it often leaves the entry stale instead. ``svc.patch`` takes only the
fragment to replace and its replacement. Both failure modes refuse rather than
clobber: an ``old_string`` that does not occur, or occurs more than once, raises
``PatchMatchError`` (with the count) and writes nothing.

A patch is an ordinary revision once its text is computed: it goes through the same
``remember`` path — evidence (the predecessor's kept, the patch's own added), identity,
canonical bytes, head compare-and-swap, re-embedding — so no rule is written twice.

The audit trail lives in the change's ``reason`` as a stable reason code,
``patch offset=O length=L delta=±D`` (code points of the normalized texts: the match
started at O in the predecessor's text, replaced L code points, and the text grew by
D), followed by ``: `` and the caller's reason when one is given. The RFC's
MemoryChange records only op, entry, versions and reason, and its reason may be "a
stable reason code"; a structured field would have changed the canonical, hashed
Revision content on both databases, so the offset and delta ride in the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from .. import canonical
from ..backends.rules import MAX_REASON_CODE_POINTS, MAX_TEXT_BYTES, normalize_reason, require_utf8
from ..errors import InvalidMemoryRequestError, MemoryEntryNotFoundError, PatchMatchError
from ..model import MemoryEntryInput, MemoryEntryVersion, MemoryRevision

__all__ = ["TextPatch", "PatchNote", "apply_patch", "occurrences", "parse_patch_reason", "patch_target", "patch_candidate"]

_REASON = re.compile(r"patch offset=(\d+) length=(\d+) delta=([+-]\d+)(?:: (.*))?", re.S)
_SHOWN = 40  # characters of a fragment quoted in an error message


@dataclass(frozen=True, slots=True)
class TextPatch:
    """The result of applying one patch to one text (pure, no I/O)."""

    text: str  # the patched text, normalized like every stored entry text
    offset: int  # code point where the match started in the original text
    length: int  # code points of the original text that were replaced
    delta: int  # len(patched text) - len(original text), in code points

    def reason_code(self) -> str:
        return f"patch offset={self.offset} length={self.length} delta={self.delta:+d}"


@dataclass(frozen=True, slots=True)
class PatchNote:
    """A patch's audit record read back from a change's reason."""

    offset: int
    length: int
    delta: int
    reason: str | None  # what the caller gave, if anything

    def describe(self) -> str:
        """``at 57: 4 → 5 chars`` (+ the caller's reason) for the lineage views."""
        text = f"at {self.offset}: {self.length} → {self.length + self.delta} chars"
        return f"{text} · {self.reason}" if self.reason else text


def _shown(fragment: str) -> str:
    return repr(fragment if len(fragment) <= _SHOWN else fragment[:_SHOWN] + "…")


def occurrences(text: str, fragment: str) -> list[int]:
    """Every start index of ``fragment`` in ``text``, overlapping ones included:
    ``"aa"`` occurs twice in ``"aaa"``, which makes a patch of it ambiguous."""
    found, start = [], text.find(fragment)
    while start != -1:
        found.append(start)
        start = text.find(fragment, start + 1)
    return found


def apply_patch(text: str, old_string: Any, new_string: Any, where: str = "the entry") -> TextPatch:
    """Replace the single occurrence of ``old_string`` in ``text`` by ``new_string``.

    Fragments are NFC-normalized like stored text but not stripped (whitespace inside
    a fragment is part of the match). Refusals are typed and name what to do next."""
    for label, value in (("old_string", old_string), ("new_string", new_string)):
        if not isinstance(value, str):
            raise InvalidMemoryRequestError(f"{label} must be a string, not {type(value).__name__}")
        require_utf8(value, label)
    old, new = canonical.nfc(old_string), canonical.nfc(new_string)
    if not old:
        raise InvalidMemoryRequestError(
            "old_string is empty: a patch replaces an existing fragment; to add text, include the text it follows"
        )
    if old == new:
        raise InvalidMemoryRequestError("old_string and new_string are identical: the patch would change nothing")
    found = occurrences(text, old)
    if not found:
        raise PatchMatchError(
            f"old_string {_shown(old)} does not occur in {where} ({len(text)} chars); nothing was written. "
            "Read the entry's current text and copy the fragment exactly",
            count=0,
        )
    if len(found) > 1:
        raise PatchMatchError(
            f"old_string {_shown(old)} occurs {len(found)} times in {where}; nothing was written. "
            "Include more surrounding text so it matches exactly once",
            count=len(found),
        )
    offset = found[0]
    patched = canonical.nfc(text[:offset] + new + text[offset + len(old):]).strip()
    if not patched:
        raise InvalidMemoryRequestError(f"the patch would leave {where} empty; to retire an entry, forget() it")
    size = len(patched.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InvalidMemoryRequestError(
            f"the patched text of {where} would be {size} UTF-8 bytes; the limit is {MAX_TEXT_BYTES}. "
            "Split it into entries of one topic each"
        )
    if patched == text:
        raise InvalidMemoryRequestError(
            f"the patch changes nothing in {where} once the text is normalized (NFC, surrounding whitespace stripped)"
        )
    start, length = _changed_span(text, patched, offset, len(old))
    return TextPatch(patched, start, length, len(patched) - len(text))


def _changed_span(text: str, patched: str, offset: int, length: int) -> tuple[int, int]:
    """Where the patch changed ``text``: the match (offset, length), widened only as far
    as normalization changed the text around it. NFC may recombine the replacement with
    a neighbour (``a`` + ``e`` → ``a`` + U+0301 gives one ``á``) and stripping may drop
    whitespace next to it: the audit then spans what really changed, so its ``L → L+D``
    never claims a non-empty replacement became 0 characters."""
    prefix = 0
    while prefix < min(offset, len(patched)) and text[prefix] == patched[prefix]:
        prefix += 1
    suffix, tail = 0, len(text) - offset - length
    while suffix < min(tail, len(patched) - prefix) and text[-1 - suffix] == patched[-1 - suffix]:
        suffix += 1
    return prefix, len(text) - prefix - suffix


def patch_reason(patch: TextPatch, reason: Any) -> str:
    """The change's reason: the reason code, then the caller's reason, within the
    RFC's 512 code points (a caller reason that does not fit is refused, not cut)."""
    code = patch.reason_code()
    given = normalize_reason(reason)
    if given is None:
        return code
    room = MAX_REASON_CODE_POINTS - len(code) - 2
    if len(given) > room:
        raise InvalidMemoryRequestError(
            f"reason has {len(given)} code points; with the patch's own record ({code!r}) it may have at most {room}"
        )
    return f"{code}: {given}"


def parse_patch_reason(reason: str | None) -> PatchNote | None:
    """The patch record in a change's reason, or None when it is not a patch."""
    match = _REASON.fullmatch(reason or "")
    if match is None:
        return None
    offset, length, delta, given = match.groups()
    return PatchNote(int(offset), int(length), int(delta), given)


def patch_target(base: MemoryRevision, entry: Any) -> str:
    """The entry id to patch in ``base``: an entry id, or a MemoryEntryVersion that
    must be the exact version ``base`` points at. Inactive entries are refused."""
    if isinstance(entry, MemoryEntryVersion):
        if entry.memory_artifact_id != base.artifact_id:
            raise InvalidMemoryRequestError(f"entry {entry.entry_id!r} belongs to another Memory")
        entry_id = entry.entry_id
    elif isinstance(entry, str):
        entry_id = entry
    else:
        raise InvalidMemoryRequestError(
            f"entry must be an entry id or a MemoryEntryVersion, got {type(entry).__name__}"
        )
    item = base.manifest.get(entry_id)
    if item is None:
        raise MemoryEntryNotFoundError(f"entry {entry_id!r} is not in {base.ref}")
    if item.state != "active":
        raise InvalidMemoryRequestError(
            f"entry {entry_id!r} is inactive in {base.ref}: reactivate() it first, then patch the new head"
        )
    if isinstance(entry, MemoryEntryVersion) and entry.entry_version_id != item.entry_version_id:
        raise InvalidMemoryRequestError(
            f"entry {entry_id!r} version {entry.entry_version_id!r} is stale: {base.ref} points at "
            f"{item.entry_version_id!r}; patch the current version"
        )
    return entry_id


def patch_candidate(
    current: MemoryEntryVersion, old_string: Any, new_string: Any, reason: Any = None,
    sources: Sequence[Any] = (), artifacts: Sequence[Any] = (),
) -> MemoryEntryInput:
    """The revision candidate a patch of ``current`` amounts to."""
    where = f"entry {current.entry_id!r} (version {current.version})"
    patch = apply_patch(current.text, old_string, new_string, where)
    return MemoryEntryInput(
        kind=current.kind, text=patch.text, sources=tuple(sources), artifacts=tuple(artifacts),
        entry=current, reason=patch_reason(patch, reason),
    )
