"""Reading a persisted Git patch: which lines each change block removed and added.

This is not a diff algorithm (Memory Core never computes one; Git did): it only splits
the unified patch Git wrote into files, and each hunk into blocks of consecutive
removed lines followed by the added lines that replaced them. A block is the unit a
fact change is read from: ``port = 5173`` removed and ``port = 5174`` added in one
block is one value that changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["ChangeBlock", "FilePatch", "parse_patch"]

_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


@dataclass(frozen=True, slots=True)
class ChangeBlock:
    removed: tuple[str, ...]
    added: tuple[str, ...]


@dataclass(slots=True)
class FilePatch:
    path: str  # the path after the change (before it, for a deletion)
    blocks: list[ChangeBlock] = field(default_factory=list)
    deleted: bool = False


def _unquote(raw: str) -> str:
    """Git quotes unusual paths C-style ("a\\tb"); octal escapes are UTF-8 bytes."""
    if not (raw.startswith('"') and raw.endswith('"')):
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4] or ""):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += ch.encode()
        i += 1
    return out.decode("utf-8", errors="replace")


def _side(line: str, prefix: str) -> str | None:
    """The path of a ``--- a/x`` / ``+++ b/x`` line, None for /dev/null."""
    raw = line[4:].split("\t", 1)[0]
    if raw == "/dev/null":
        return None
    raw = _unquote(raw)
    return raw[len(prefix):] if raw.startswith(prefix) else raw


def parse_patch(patch: str) -> list[FilePatch]:
    """Files of a ``git diff`` patch with their change blocks, in patch order."""
    files: list[FilePatch] = []
    current: FilePatch | None = None
    removed: list[str] = []
    added: list[str] = []
    old_path: str | None = None
    in_hunk = False

    def flush() -> None:
        if current is not None and (removed or added):
            current.blocks.append(ChangeBlock(tuple(removed), tuple(added)))
        removed.clear()
        added.clear()

    for line in patch.splitlines():
        if line.startswith("diff --git "):
            flush()
            current, old_path, in_hunk = None, None, False
        elif not in_hunk and line.startswith("--- "):
            old_path = _side(line, "a/")
        elif not in_hunk and line.startswith("+++ "):
            new_path = _side(line, "b/")
            current = FilePatch(path=new_path or old_path or "", deleted=new_path is None)
            files.append(current)
        elif _HUNK.match(line):
            flush()
            in_hunk = current is not None
        elif in_hunk and line.startswith("-"):
            if added:  # a new block starts: removed lines after added ones
                flush()
            removed.append(line[1:])
        elif in_hunk and line.startswith("+"):
            added.append(line[1:])
        elif in_hunk and (line.startswith(" ") or line == ""):
            flush()
        # "\ No newline at end of file" and extended headers carry no lines
    flush()
    return files
