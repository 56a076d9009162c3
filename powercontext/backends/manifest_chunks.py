"""How a Revision's canonical content is stored: content-addressed chunks shared between
Revisions, so that a Revision costs storage proportional to its changes (issue 15).

The RFC fixes the flat-v1 manifest, its canonical bytes and its content hash; it does
not fix how rows store them. The canonical text of a MemoryContent is

    {"changes":[…],"manifest":{"entries":[E1,E2,…],"format":"flat-v1"},"schema":"…"}

(RFC 8785 sorts the keys, so this is its exact shape). It is cut into *leaves*: the
head (everything up to and including ``"entries":[``, i.e. the change list), groups of
consecutive manifest entries, and the tail. Group boundaries are chosen by the entry
ids (content-defined: a group ends after an entry whose id hashes to 0 mod
``LEAF_TARGET``, or at ``LEAF_CAP`` entries), so an edit, insert or append changes
the one group it falls in and every other group — and its chunk — is shared with the
base Revision. The group keys are grouped the same way into *index* chunks. A
Revision row then stores only its *root*::

    chunks-v1 <head key> <tail key> <index key> <index key> …

A head longer than ``HEAD_PIECE`` characters (a Revision of more than ~800 changes) is
stored as consecutive pieces, ``<key>+<key>+…`` in the head's place: one change list
is then never one value over the server's packet limit (a 100k-entry ``remember()``
has a 16 MB change list; OceanBase's ``max_allowed_packet`` is 16 MB).

Every chunk is stored once under ``sha256(domain ‖ text)``: a chunk whose text does not
hash to its key is refused on read, and the reassembled text must still hash to the
Revision's content hash (base.py), so altering any chunk or the root is detected.
Rows written before chunking hold the canonical text itself (it starts with ``{``);
both forms read the same, and ``migrate`` in the adapters converts the old form.

Encoding reuses the canonical text of every group that the base Revision already had
(``Layout``), so a one-entry commit encodes one group, not the whole manifest; given the
commit's ``manifest_diff`` against the base it also cuts only the groups around the
change (``_regroup``) and the index runs around them (``_runs``), and it feeds the
content hash one index run at a time, from bytes kept per run, without building the
text. The hash itself still reads every byte: the RFC hashes the complete canonical
text, whose first bytes are the Revision's own change list.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import operator
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable, Mapping, Sequence

from .. import canonical
from ..errors import InvalidCitationError
from ..model import MemoryChange, MemoryContent, MemoryManifest, MemoryManifestEntry

ROOT_PREFIX = "chunks-v1 "
CHUNK_DOMAIN = b"powercontext:manifest-chunk:v1\0"
# Mean entries per group: ~3.4 KB of canonical text. Smaller groups make a change and
# a search's re-check of its candidates' chunks cheaper; the index chunks keep the
# root short (10k entries: ~10 index keys; 100k: ~100).
LEAF_TARGET = 16
LEAF_CAP = 64
INDEX_TARGET = 64  # mean group keys per index chunk
INDEX_CAP = 256
# Characters per stored piece of the head (the change list): at most 512 KB in UTF-8,
# 256 KB of it escaped, so every piece fits a 1 MB max_allowed_packet.
HEAD_PIECE = 1 << 17
_ENTRIES_OPEN = ',"manifest":{"entries":['
_ENTRIES_CLOSE = '],"format":'


def chunk_key(text: str) -> str:
    return hashlib.sha256(CHUNK_DOMAIN + text.encode("utf-8")).hexdigest()


def is_chunked(stored: str) -> bool:
    return stored.startswith(ROOT_PREFIX)


@dataclass(frozen=True)
class Group:
    entries: tuple[MemoryManifestEntry, ...]
    text: str
    key: str

    @cached_property
    def nbytes(self) -> int:
        """Approximate memory held (text, its bytes and the entry objects); a Group is
        shared by every cached Revision that holds it, so this is computed once."""
        return 2 * len(self.text) + 64 * len(self.entries) + 160

    @cached_property
    def key_bits(self) -> int:
        return int(self.key[:8], 16)


@dataclass(frozen=True)
class Run:
    """Consecutive groups whose keys make one index chunk (``text``, stored under
    ``key``), and the bytes the content hash reads for them. A commit cuts, joins and
    encodes only the runs around its change and feeds the hash one run at a time: fed
    group by group, hashlib dropped and retook the GIL ~600 times a commit at 10k
    entries (~0.2 ms), and the index was re-cut over every group key."""

    groups: tuple[Group, ...]
    text: str
    key: str

    @classmethod
    def of(cls, groups: tuple[Group, ...]) -> "Run":
        text = " ".join(map(_KEY, groups))
        return cls(groups, text, chunk_key(text))

    @cached_property
    def data(self) -> bytes:
        """``,`` + the groups' texts joined by ``,``, in UTF-8 (the first run is fed
        without its leading comma)."""
        return ("," + ",".join(g.text for g in self.groups)).encode("utf-8")

    def closed(self, target: int, cap: int) -> bool:
        """Whether it ended by the cut rule, not merely because the groups did."""
        return self.groups[-1].key_bits % target == 0 or len(self.groups) >= cap


@dataclass(frozen=True)
class Layout:
    """A verified Revision's canonical text as stored: what the next commit reuses."""

    root: str
    groups: tuple[Group, ...]
    others: tuple[tuple[str, str], ...] = ()  # (key, text) of the head, tail and index chunks
    # The manifest entries the groups cover (the very tuple) and the (leaf_target,
    # leaf_cap) that cut them, when known: what lets the next commit regroup only
    # around its changes (``_regroup``). None for a layout read back from storage.
    entries: tuple[MemoryManifestEntry, ...] | None = None
    sizes: tuple[int, int] | None = None
    # The index runs over ``groups`` and the (index_target, index_cap) that cut them,
    # when this layout was encoded here (None when read back from storage).
    runs: tuple["Run", ...] | None = None
    index_sizes: tuple[int, int] | None = None
    # Where each group starts among the entries, and one past the last: given by
    # encode (from the base's, so a commit does not recount every group), else
    # counted when the next commit regroups on this layout.
    group_starts: list[int] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def starts(self) -> list[int]:
        if self.group_starts is not None:
            return self.group_starts
        return list(itertools.accumulate(map(len, map(_ENTRIES, self.groups)), initial=0))

    def reusable(self) -> dict[str, Group]:
        """Groups by their first entry id (the caller compares the whole group: the
        service builds a new manifest from the base's entry objects, so comparing an
        unchanged group is mostly identity checks)."""
        return {g.entries[0].entry_id: g for g in self.groups}

    @property
    def nbytes(self) -> int:
        """Approximate memory held (text + entry objects), for byte-bounded caches."""
        return len(self.root) + sum(len(t) for _, t in self.others) + sum(map(_NBYTES, self.groups))


_NBYTES = operator.attrgetter("nbytes")
_ENTRIES = operator.attrgetter("entries")
_KEY = operator.attrgetter("key")
_KEY_BITS = operator.attrgetter("key_bits")


@dataclass(frozen=True)
class Encoded:
    content_hash: str
    root: str
    layout: Layout
    head: str
    tail: str
    reused_from: Layout | None = None  # the base layout whose groups were reused
    fresh: tuple[Group, ...] = ()  # the groups encoded here (the others are reused_from's)
    fresh_runs: tuple[Run, ...] = ()  # the index runs cut here (the others are reused_from's)
    shell: tuple[tuple[str, str], ...] = ()  # (key, text) of the head pieces and the tail

    @cached_property
    def chunks(self) -> dict[str, str]:
        """Every chunk the root reaches: key -> text."""
        out = dict(self.layout.others)
        out.update((g.key, g.text) for g in self.layout.groups)
        return out

    def new_chunks(self, known: Layout | None) -> dict[str, str]:
        """The chunks a Revision stored on ``known`` must add: with the layout the
        groups were reused from, its fresh groups and the small head, tail and index
        chunks; otherwise whatever ``known`` does not reference."""
        if known is not None and known is self.reused_from:
            out = dict(self.shell)
            out.update((r.key, r.text) for r in self.fresh_runs)
            out.update((g.key, g.text) for g in self.fresh)
            return out
        reachable = set() if known is None else set(_root_tokens(known.root)) | {g.key for g in known.groups}
        return {k: t for k, t in self.chunks.items() if k not in reachable}

    @cached_property
    def text(self) -> str:
        """The whole canonical text (reads compare it with what is stored; a commit
        needs only the hash, so it is not built there)."""
        return self.head + ",".join(g.text for g in self.layout.groups) + self.tail


def _ends_group(entry: MemoryManifestEntry, target: int) -> bool:
    return zlib.crc32(entry.entry_id.encode("utf-8")) % target == 0


def _groups(entries: Sequence[MemoryManifestEntry], target: int, cap: int) -> list[tuple[MemoryManifestEntry, ...]]:
    entries = tuple(entries)
    ends = [zlib.crc32(e.entry_id.encode("utf-8")) % target == 0 for e in entries]
    out, start = [], 0
    for i, end in enumerate(ends):
        if end or i + 1 - start >= cap:
            out.append(entries[start:i + 1])
            start = i + 1
    if start < len(entries):
        out.append(entries[start:])
    return out


def _regroup(entries: tuple[MemoryManifestEntry, ...], base: Layout, placed, target: int, cap: int) -> list:
    """The groups ``_groups(entries)`` would cut, reusing the base's Group objects
    wherever they are unchanged. ``placed`` (manifest_diff) lists the changed or added
    items by position; everything else equals the base entries, shifted by the added
    ones before it.

    Why this is exact: a group boundary depends only on the entries of its own group
    (its last id's crc, or the cap counted from the group's start), so a base group
    that lies wholly before the next change, and starts at a boundary, ends at the same
    boundary. From the group holding a change the entries are cut afresh, until a cut
    falls on a base group's start with no change left before it: from there on the
    entries and therefore the cuts are the base's again. The base's last group may
    have ended only because the entries did; it is reused only if it ended by the rule.
    (tests/unit/test_manifest_regroup.py compares with ``_groups`` under hypothesis.)"""
    groups = base.groups
    starts = base.starts
    last = groups[-1].entries if groups else ()
    last_closed = bool(last) and (_ends_group(last[-1], target) or len(last) >= cap)
    out: list = []
    j = shift = k = 0
    m, total = len(groups), len(entries)
    reusable = m if last_closed else m - 1  # groups that may be taken whole
    while k < len(placed):
        at = placed[k].position
        # the base groups that end at or before the change, taken whole (bisect: an
        # append to a 10k-entry Memory passes ~600 of them)
        whole = min(max(j, bisect.bisect_right(starts, at - shift) - 1), reusable)
        out.extend(groups[j:whole])
        j = max(j, whole)
        start = i = starts[j] + shift
        while True:
            if i == total:
                if start < i:
                    out.append(entries[start:i])
                k, j = len(placed), m
                break
            i += 1
            if _ends_group(entries[i - 1], target) or i - start >= cap:
                out.append(entries[start:i])
                start = i
                while k < len(placed) and placed[k].position < i:
                    shift += placed[k].old is None
                    k += 1
                aligned = bisect.bisect_left(starts, i - shift)
                if aligned < m and starts[aligned] == i - shift:  # a base group starts here
                    j = aligned
                    break
    out.extend(groups[j:])
    return out


def _head(changes: Iterable[MemoryChange]) -> str:
    return '{"changes":[' + canonical.objects_text([c.to_canonical() for c in changes]) + "]" + _ENTRIES_OPEN


def _tail(manifest: MemoryManifest, schema: str) -> str:
    return (_ENTRIES_CLOSE + canonical.canonical_text(manifest.format) + '},"schema":'
            + canonical.canonical_text(schema) + "}")


def _group(entries: tuple[MemoryManifestEntry, ...]) -> Group:
    # one canonicalization per group: the array's text without its brackets
    text = canonical.objects_text([e.to_canonical() for e in entries])
    return Group(entries, text, chunk_key(text))


def encode(content: MemoryContent, base: Layout | None = None, *, diff=None, leaf_target: int = LEAF_TARGET,
           leaf_cap: int = LEAF_CAP, index_target: int = INDEX_TARGET, index_cap: int = INDEX_CAP,
           head_piece: int = HEAD_PIECE) -> Encoded:
    """The canonical text, content hash and chunks of ``content``; groups that ``base``
    already holds are reused as they are (their text is canonical already). With the
    ``diff`` of this manifest against the very entries ``base`` was cut from, only the
    groups around the changes are cut and encoded again (``_regroup``); the result is
    the same either way."""
    entries = content.manifest.entries
    head = _head(content.changes)
    tail = _tail(content.manifest, content.schema)
    sizes = (leaf_target, leaf_cap)
    fresh = []
    fresh_at = None  # (first, last + 1) of the fresh groups, when _regroup placed them
    if (base is not None and diff is not None and base.sizes == sizes and base.entries is not None
            and base.entries is diff.base and diff.entries is entries):
        groups = _regroup(entries, base, diff.placed, leaf_target, leaf_cap)
        for i, g in enumerate(groups):
            if not isinstance(g, Group):
                groups[i] = _group(g)
                fresh.append(groups[i])
                fresh_at = (fresh_at or (i, i))[0], i + 1
    else:
        reuse = base.reusable() if base is not None else {}
        groups = []
        for part in _groups(entries, leaf_target, leaf_cap):
            group = reuse.get(part[0].entry_id)
            if group is None or group.entries != part:
                group = _group(part)
                fresh.append(group)
            groups.append(group)
    runs, fresh_runs = _runs(groups, base, fresh_at, index_target, index_cap)
    starts = None
    if fresh_at is not None:  # groups before the first fresh one are the base's own
        first = fresh_at[0]
        starts = base.starts[:first + 1]
        starts.extend(itertools.accumulate(map(len, map(_ENTRIES, groups[first:])), initial=starts[-1]))
        del starts[first + 1]  # the initial value, already there
    # The hash of the whole canonical text, fed run by run: the 2 MB text of a
    # 10k-entry manifest is never assembled on a commit (joining and encoding it cost
    # twice the hashing). RFC: SHA-256 over the complete canonical bytes, unchanged.
    digest = hashlib.sha256(canonical.ARTIFACT_CONTENT_DOMAIN)
    digest.update(head.encode("utf-8"))
    if runs:
        digest.update(memoryview(runs[0].data)[1:])  # no comma before the first group
        for run in itertools.islice(runs, 1, None):
            digest.update(run.data)
    digest.update(tail.encode("utf-8"))
    content_hash = digest.hexdigest()
    pieces = [head[i:i + head_piece] for i in range(0, len(head), head_piece)]
    head_keys = [chunk_key(p) for p in pieces]
    shell = dict(zip(head_keys, pieces))
    tail_key = chunk_key(tail)
    shell[tail_key] = tail
    others = dict(shell)
    others.update((r.key, r.text) for r in runs)
    root = ROOT_PREFIX + " ".join(["+".join(head_keys), tail_key, *(r.key for r in runs)])
    layout = Layout(root, tuple(groups), tuple(others.items()), entries, sizes, tuple(runs), (index_target, index_cap),
                    starts)
    return Encoded(content_hash, root, layout, head, tail, base, tuple(fresh), tuple(fresh_runs), tuple(shell.items()))


def _runs(groups: list[Group], base: Layout | None, fresh_at: tuple[int, int] | None, target: int,
          cap: int) -> tuple[list[Run], list[Run]]:
    """The index runs over ``groups`` (each ends after a group whose key's first 32
    bits are 0 mod ``target``, or at ``cap`` groups) and those of them cut here.

    ``fresh_at`` = (first, last + 1) of the groups encoded afresh, when every other
    group is the base's own, in the base's order (what ``_regroup`` returns). Then, as
    for groups: a base run wholly before ``first`` that ended by the rule is cut the
    same again; from the run holding ``first`` the groups are cut afresh, until a cut
    at or after ``last + 1`` falls on a base run's start (shifted by the groups added):
    from there on the groups and so the cuts are the base's. Otherwise every group is
    cut, and a run equal to a base run (same first key, same Group objects) is reused."""
    base_runs = None
    if base is not None and base.runs is not None and base.index_sizes == (target, cap):
        base_runs = base.runs
    out: list[Run] = []
    start = 0
    first, last = fresh_at if fresh_at is not None and base_runs is not None else (0, len(groups))
    tail: tuple[Run, ...] = ()
    align: dict[int, int] = {}
    if base_runs is not None and fresh_at is not None:
        for run in base_runs:
            end = start + len(run.groups)
            if end > first or not run.closed(target, cap):
                break
            out.append(run)
            start = end
        shift = len(groups) - len(base.groups)
        at = 0
        for i, run in enumerate(base_runs):  # base run starts, as positions in the new groups
            if at + shift >= last:
                align[at + shift] = i
            at += len(run.groups)
    reuse = {} if base_runs is None else {r.groups[0].key: r for r in base_runs}
    fresh: list[Run] = []
    s = start
    for i in range(start, len(groups)):
        if groups[i].key_bits % target == 0 or i + 1 - s >= cap or i + 1 == len(groups):
            part = tuple(groups[s:i + 1])
            run = reuse.get(part[0].key)
            if run is None or run.groups != part:
                run = Run.of(part)
                fresh.append(run)
            out.append(run)
            s = i + 1
            if s in align:
                tail = base_runs[align[s]:]
                break
    out.extend(tail)
    return out, fresh


Fetch = Callable[[list[str]], Mapping[str, str]]


def _fetch_verified(fetch: Fetch, keys: list[str], where: str) -> dict[str, str]:
    got = dict(fetch(list(dict.fromkeys(keys))))
    for key in keys:
        text = got.get(key)
        if text is None:
            raise InvalidCitationError(f"{where}: manifest chunk {key[:12]}… is missing (altered or deleted row)")
        if chunk_key(text) != key:
            raise InvalidCitationError(f"{where}: manifest chunk {key[:12]}… does not hash to its key (altered row)")
    return got


def _root_tokens(root: str) -> list[str]:
    return root[len(ROOT_PREFIX):].replace("+", " ").split(" ")


def _root_keys(root: str, where: str) -> tuple[list[str], str, list[str]]:
    """(head piece keys, tail key, index keys) of a root."""
    keys = root[len(ROOT_PREFIX):].split(" ")
    head = keys[0].split("+")
    if len(keys) < 2 or any(len(k) != 64 for k in keys[1:] + head):
        raise InvalidCitationError(f"{where}: its chunk list is malformed (altered row)")
    return head, keys[1], keys[2:]


def head_keys(root: str) -> list[str]:
    """The keys of a chunked Revision's head pieces (its change list), if well-formed."""
    keys = root[len(ROOT_PREFIX):].split(" ", 1)[0].split("+")
    return keys if all(len(k) == 64 for k in keys) else []


def read_changes(root: str, fetch: Fetch, where: str) -> tuple[MemoryChange, ...]:
    """The change list of a chunked Revision from its head chunk alone (hash-checked
    against its key): what ``changes()`` needs, without the manifest."""
    keys = _root_keys(root, where)[0]
    got = _fetch_verified(fetch, keys, where)
    head = "".join(got[k] for k in keys)
    if not head.startswith('{"changes":') or not head.endswith(_ENTRIES_OPEN):
        raise InvalidCitationError(f"{where}: its change list chunk is malformed (altered row)")
    try:
        data = json.loads(head[len('{"changes":'):-len(_ENTRIES_OPEN)])
        return tuple(MemoryChange(**c) for c in data)
    except (ValueError, TypeError) as exc:
        raise InvalidCitationError(f"{where}: its change list does not parse (altered row): {exc}"[:500]) from None


def decode(root: str, fetch: Fetch, where: str, known: Callable[[str], Group | None] | None = None) -> tuple[str, Layout]:
    """Reassemble the exact stored text of a chunked Revision (every chunk checked
    against its key) and the layout of its groups. The caller still checks the text
    against the Revision's content hash and canonical form. ``known(key)``: a Group
    already parsed; it is taken instead of parsing a chunk holding exactly its text."""
    head_keys_, tail_key, index_keys = _root_keys(root, where)
    indexes = _fetch_verified(fetch, index_keys, where)
    group_keys = [k for ik in index_keys for k in indexes[ik].split(" ") if k]
    leaves = _fetch_verified(fetch, [*head_keys_, tail_key, *group_keys], where)
    groups = []
    for key in group_keys:
        text = leaves[key]
        group = None if known is None else known(key)
        if group is not None and group.text == text:
            groups.append(group)
            continue
        try:
            entries = tuple(MemoryManifestEntry(**e) for e in json.loads("[" + text + "]"))
        except (ValueError, TypeError) as exc:
            raise InvalidCitationError(f"{where}: manifest chunk {key[:12]}… does not parse (altered row): {exc}"[:500]) from None
        groups.append(Group(entries, text, key))
    head = "".join(leaves[k] for k in head_keys_)
    text = head + ",".join(g.text for g in groups) + leaves[tail_key]
    others = (*((k, leaves[k]) for k in head_keys_), (tail_key, leaves[tail_key]), *((k, indexes[k]) for k in index_keys))
    return text, Layout(root, tuple(groups), tuple(dict(others).items()))


def shell_text(layout: Layout, where: str) -> str:
    """A decoded Revision's text without its manifest entries (head + tail: the change
    list, the format and the schema), a JSON document of its own."""
    head_keys_, tail_key, _ = _root_keys(layout.root, where)
    texts = dict(layout.others)
    return "".join(texts[k] for k in head_keys_) + texts[tail_key]
