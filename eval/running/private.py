"""Run folders and the embedding cache are created private: folders 0700, files 0600.

They hold every memory's text (candidates, per-query tables, the report, cached vectors
keyed by text), as the SQLite databases beside them do, and those are 0600. The modes
are set explicitly (``chmod`` after creating), not left to the process's umask: a umask
of 022 would otherwise give every local user a copy. A folder that already existed is
left as its owner set it; only what the harness creates is tightened.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

__all__ = ["DIR_MODE", "FILE_MODE", "missing_folders", "private_dir", "private_file", "remove_empty", "tighten",
           "write_private_text"]

DIR_MODE, FILE_MODE = 0o700, 0o600


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder; every folder created on the way is 0700."""
    path = Path(path)
    for folder in reversed(missing_folders(path)):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:  # another process made it meanwhile: it is theirs to set
            continue
        os.chmod(folder, DIR_MODE)
    if not path.is_dir():  # an existing file in the way: mkdir's own error says which
        path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def private_file(path: str | os.PathLike[str], mode: str = "wb", encoding: str | None = None) -> Iterator[IO]:
    """``open(path, mode)`` for writing, the file 0600 before a byte is written (also
    when it existed with another mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        fh = os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None)
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def write_private_text(path: str | os.PathLike[str], text: str) -> Path:
    with private_file(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return Path(path)


def tighten(path: str | os.PathLike[str]) -> Path:
    """0600 on a file another library wrote (its folder is private already, so nobody
    else could open it in between)."""
    os.chmod(path, FILE_MODE)
    return Path(path)


def missing_folders(path: str | os.PathLike[str]) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first: what a
    run would create, so that a run which fails can take back exactly that."""
    path, out = Path(path), []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        out.append(folder)
    return out


def remove_empty(created: list[Path]) -> None:
    """Remove the folders of ``created`` (deepest first) that hold nothing but empty
    folders: a run that failed before writing anything leaves no empty run folder
    behind. A folder with any file in it is kept, and so is everything above it."""
    for folder in created:
        if not folder.is_dir():
            continue
        for inner, dirs, _ in os.walk(folder, topdown=False):
            for name in dirs:
                try:
                    os.rmdir(os.path.join(inner, name))
                except OSError:
                    pass  # not empty: kept
        try:
            folder.rmdir()
        except OSError:
            return
