"""Let Git produce the change Source (Memory RFC "Source changes and incremental
evidence": the runtime stores ``last_processed_commit`` and asks Git for base..head).

This drives the ``git`` CLI rather than GitPython or dulwich: GitPython shells out to
the same binary (one more dependency, no fewer processes), and dulwich re-implements
diff, so its patch would not be the text the user's own ``git diff`` shows — the
evidence must be Git's. Three plumbing calls suffice. Every option that user or repo
configuration could change (prefixes, renames, colour, external drivers, textconv,
algorithm, abbreviation) is pinned on the command line, so the same commits always
give the same bytes and therefore the same Source hash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from ..errors import CapabilityNotSupportedError, InvalidMemoryRequestError
from .sources import GitChangeSource

__all__ = ["git_change", "DIFF_OPTIONS", "MAX_PATCH_BYTES"]

MAX_PATCH_BYTES = 1 << 20  # a Source is one database row; a larger change should name its paths
DIFF_OPTIONS = (
    "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--full-index", "--unified=3",
    "--diff-algorithm=myers", "--src-prefix=a/", "--dst-prefix=b/",
)


def _git(repo: Path, *args: str) -> bytes:
    binary = shutil.which("git")
    if binary is None:
        raise CapabilityNotSupportedError("the git CLI is not installed; a GitChangeSource needs it")
    env = {**os.environ, "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run([binary, "-C", str(repo), "-c", "core.quotepath=false", *args],
                          capture_output=True, env=env, timeout=60)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InvalidMemoryRequestError(f"git {args[0]} failed in {repo}: {message[-1] if message else 'no message'}")
    return done.stdout


def _commit(repo: Path, rev: str) -> str:
    if not isinstance(rev, str) or not rev or rev.startswith("-"):
        raise InvalidMemoryRequestError(f"not a revision: {rev!r}")
    return _git(repo, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}").decode().strip()


def git_change(
    repo: str | os.PathLike, base: str, head: str = "HEAD", *, name: str | None = None,
    paths: Sequence[str] = (), repository: str | None = None, max_patch_bytes: int = MAX_PATCH_BYTES,
) -> GitChangeSource:
    """The GitChangeSource of ``base..head`` in the repository at ``repo`` (optionally
    limited to ``paths``). Commits are resolved to full ids; the default name is
    ``src_git_<base12>_<head12>``. Persist it with ``await svc.sources.persist(...)``."""
    where = Path(repo)
    if not where.is_dir():
        raise InvalidMemoryRequestError(f"no repository directory at {where}")
    base_id, head_id = _commit(where, base), _commit(where, head)
    pathspec = ("--", *paths) if paths else ()
    touched = [p for p in _git(where, "diff", "--name-only", "-z", "--no-renames", base_id, head_id, *pathspec)
               .decode("utf-8", "surrogateescape").split("\0") if p]
    patch = _git(where, "diff", *DIFF_OPTIONS, base_id, head_id, *pathspec)
    if len(patch) > max_patch_bytes:
        raise InvalidMemoryRequestError(
            f"the patch {base_id[:12]}..{head_id[:12]} is {len(patch)} bytes (limit {max_patch_bytes}); "
            "pass paths=… to keep the evidence to the files that matter"
        )
    return GitChangeSource(
        name=name or f"src_git_{base_id[:12]}_{head_id[:12]}", base_commit=base_id, head_commit=head_id,
        paths=tuple(touched), patch=patch.decode("utf-8", "replace"), repository=repository,
    )
