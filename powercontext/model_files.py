"""What a local model folder's embedding profile hashes: every file that can change
its vectors (weights, tokenizer, configs), streamed, so a changed model gets a new
profile and an old database refuses it instead of searching stored vectors the new
weights no longer match.

Weights run to hundreds of MB; hashing them on every open would cost seconds, so each
file's digest is cached by what changes whenever its bytes change (size, mtime and
ctime in nanoseconds, inode). ctime is what makes the cache safe: ``cp -p`` or
``touch -r`` can put back an old mtime, but no user call can set ctime.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

__all__ = ["cache_path", "defining_files", "folder_digest", "file_digest", "unreadable_file"]

CHUNK = 1 << 20  # 1 MiB reads: flat memory whatever the weights' size
CACHE_VERSION = 1
CACHE_ENTRIES = 512  # files remembered; the oldest go first
# Files that never reach the model: documentation and repository bookkeeping.
_NOT_READ_PREFIXES = ("readme", "license", "licence")
_NOT_READ_SUFFIXES = (".md",)


def cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "powercontext" / "model-digests.json"


def defining_files(folder: Path) -> list[Path]:
    """Every regular file under ``folder`` (symlinks followed) but hidden ones (``.git``,
    ``.cache``) and documentation, sorted by relative path. Rather more than the loader
    reads than less: a file hashed needlessly costs a new profile when it changes, a
    file missed costs silently wrong searches."""
    found = []
    for path in folder.rglob("*"):
        parts = path.relative_to(folder).parts
        name = parts[-1].lower()
        if any(p.startswith(".") for p in parts) or name.startswith(_NOT_READ_PREFIXES) or name.endswith(_NOT_READ_SUFFIXES):
            continue
        if path.is_file():
            found.append(path)
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def _stamp(path: Path) -> list[int]:
    st = path.stat()  # follows a symlink: the bytes read are the target's
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def file_digest(path: Path, cache: dict[str, list] | None = None) -> str:
    """SHA-256 of one file, streamed; from ``cache`` when its stamp is unchanged
    (the cache then gains the new digest)."""
    key = str(path.resolve())
    stamp = _stamp(path)
    if cache is not None:
        known = cache.get(key)
        if isinstance(known, list) and known[:-1] == stamp:
            return str(known[-1])
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    if cache is not None:
        cache.pop(key, None)  # re-inserted last: the dict's order is its age
        cache[key] = [*stamp, digest.hexdigest()]
    return digest.hexdigest()


def _read_cache() -> dict[str, list]:
    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("files"), dict):
        return {}
    return data["files"]


def _write_cache(files: dict[str, list]) -> None:
    """Atomically (another process may read it at the same time); a cache that cannot
    be written (read-only home) only costs the next open a re-hash."""
    keep = dict(list(files.items())[-CACHE_ENTRIES:])
    target = cache_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".model-digests-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": CACHE_VERSION, "files": keep}, f)
        os.replace(tmp, target)
    except OSError:
        pass


def folder_digest(folder: Path) -> str:
    """One SHA-256 over each defining file's relative path and content digest: the
    same for a moved or copied folder, another one when any defining byte changes."""
    cache = _read_cache()
    before = dict(cache)
    total = hashlib.sha256()
    for path in defining_files(folder):
        total.update(os.fsencode(path.relative_to(folder).as_posix()) + b"\0" + file_digest(path, cache).encode() + b"\n")
    if cache != before:
        _write_cache(cache)
    return total.hexdigest()


def unreadable_file(folder: Path) -> tuple[str, str] | None:
    """(relative path, what is wrong) of the first defining file that does not parse
    (a JSON config, a safetensors header), or a modules.json module folder that is
    missing; None when every one parses. Says which file a load failure came from."""
    modules = None
    for path in defining_files(folder):
        name = path.relative_to(folder).as_posix()
        try:
            if path.suffix == ".json":
                value = json.loads(path.read_text(encoding="utf-8"))
                if path.parent == folder and path.name == "modules.json":
                    modules = value
            elif path.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(path), framework="numpy"):
                    pass
        except Exception as exc:  # noqa: BLE001 - any parse failure names the file
            return name, f"does not parse ({type(exc).__name__}: {str(exc)[:120]})"
    for module in modules if isinstance(modules, list) else ():
        where = module.get("path") if isinstance(module, dict) else None
        if isinstance(where, str) and where and not (folder / where).is_dir():
            return where, "is missing (modules.json lists it)"
    return None
