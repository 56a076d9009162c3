"""Canonical bytes, content hashes and identifiers (RFC 000 "Normalization, hashing").

Every hash in the project is computed here, once: JSON is canonicalized with RFC 8785
(JCS, via the ``rfc8785`` package) after NFC-normalizing every string, NaN/Infinity
are refused, and SHA-256 digests are taken over a domain prefix + the canonical bytes so
that an entry hash can never collide with an artifact or embedding hash by construction.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import re
import time
import unicodedata
from typing import Any, Callable, Sequence

import rfc8785

ENTRY_CONTENT_DOMAIN = b"powercontext:entry-content:v1\0"
ARTIFACT_CONTENT_DOMAIN = b"powercontext:artifact-content:v1\0"
SOURCE_CONTENT_DOMAIN = b"powercontext:source-content:v1\0"
EMBEDDING_CONTENT_DOMAIN = b"powercontext:embedding-content:v1\0"

MAX_ID_LENGTH = 128
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CROCKFORD_PAIRS = [a + b for a in _CROCKFORD for b in _CROCKFORD]  # index: a 10-bit value
_PAIR_SHIFTS = tuple(range(120, -1, -10))  # 13 pairs: the 26 digits of 130 bits


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


_SAFE_INTEGER = 2**53 - 1  # ES numbers print integers up to here exactly as Python does
_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _normalize(value: Any, plain: list[bool] | None = None) -> Any:
    """NFC every string (keys included) and refuse non-finite floats. ``plain[0]`` is
    cleared when the value holds anything the standard library's encoder would not
    write as RFC 8785 does (see ``canonical_bytes``)."""
    if isinstance(value, str):
        return nfc(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if plain is not None and not -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
            plain[0] = False
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and Infinity have no canonical JSON form")
        if plain is not None:
            plain[0] = False
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"canonical JSON keys must be strings, not {type(key).__name__}")
            if plain is not None and not key.isascii():
                plain[0] = False
            out[nfc(key)] = _normalize(item, plain)
        if len(out) != len(value):
            raise ValueError("two keys are equal after NFC normalization")
        return out
    if isinstance(value, (list, tuple)):
        return [_normalize(item, plain) for item in value]
    raise TypeError(f"{type(value).__name__} has no canonical JSON form")


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical JSON of ``value`` after NFC normalization.

    Values made of strings, ints within ±(2**53 − 1), booleans, null, lists and objects
    with ASCII keys (entry contents, references, profiles) are written by the standard
    library's C encoder: for exactly these it writes what RFC 8785 writes (members
    sorted by key — code points and UTF-16 units agree on ASCII —, no whitespace,
    strings escaped only for ``"``, ``\\`` and control characters, the short forms
    and lowercase ``\\u00xx``; integers in decimal). Anything else — floats, larger
    integers, non-ASCII keys, a lone surrogate — goes through the ``rfc8785`` encoder.
    Every version a cold read returns is hashed here: through ``rfc8785`` that was a
    third of ``entries()`` of 20k entries after a reopen. tests/unit/test_canonical.py
    holds the two paths equal."""
    plain = [True]
    normalized = _normalize(value, plain)
    if plain[0]:
        try:
            return _JSON.encode(normalized).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the encoder below words the refusal
            pass
    return rfc8785.dumps(normalized)


def canonical_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


# Printable ASCII other than '"' and '\\': RFC 8785 writes such a string as it is, between
# quotes, and NFC leaves it alone.
_PLAIN_STRING = re.compile(r'[\x20\x21\x23-\x5b\x5d-\x7e]*')
_PLAIN_KEY = re.compile(r"[a-z_]+")


@functools.lru_cache(maxsize=64)
def _object_format(keys: tuple[str, ...], nulls: tuple[bool, ...]) -> str:
    """``canonical_text`` of an object with these (plain) keys whose values are null
    where ``nulls`` says so and otherwise the %-format field ``%(key)s``: a plain
    string, so the encoder writes it as it is."""
    return canonical_text({k: None if null else f"%({k})s" for k, null in zip(keys, nulls)})


def objects_text(objects: Sequence[dict[str, Any]]) -> str:
    """``canonical_text(list(objects))`` without its brackets: the objects' canonical
    texts joined by commas (a manifest group's stored text, a change list's).

    When every object has the first one's keys and every value is None or a plain
    string (see ``_PLAIN_STRING``: manifest entries and changes, whose ids and hashes
    are printable ASCII), each object's text is the encoder's own text of that shape
    (its keys, and which values are null) filled with the values: neither the key order
    nor a plain string's form depends on the values. Otherwise the encoder
    canonicalizes them one by one. Verifying a 20k-entry head Revision spent 1.2 of its
    1.7 s in the encoder before (tests/unit/test_canonical_objects.py holds the two
    paths equal)."""
    if not objects:
        return ""
    try:
        keys = objects[0].keys()
        plain = (all(_PLAIN_KEY.fullmatch(k) for k in keys) and all(o.keys() == keys for o in objects)
                 and _PLAIN_STRING.fullmatch("".join(
                     v for o in objects for v in o.values() if v is not None)) is not None)
    except (AttributeError, TypeError):  # not a dict, or a key or value that is neither
        plain = False
    if not plain:
        return canonical_text(list(objects))[1:-1]
    order = tuple(keys)
    return ",".join(_object_format(order, tuple(o[k] is None for k in order)) % o for o in objects)


def sha256_hex(domain: bytes, payload: bytes) -> str:
    return hashlib.sha256(domain + payload).hexdigest()


_ENTRY_KEYS = frozenset(("artifacts", "kind", "sources", "text"))
_encode_string = json.encoder.encode_basestring  # what _JSON writes for a str value


def _entry_content_bytes(content: Any) -> bytes:
    """``canonical_bytes`` of an entry's content (model.entry_content). With no
    references — what nearly every entry of a bulk load is — it is two strings in a
    fixed frame (keys sorted; the strings as the standard encoder writes them, which
    ``canonical_bytes`` documents as RFC 8785's form), written without walking the
    value: a 50k-entry load hashed every entry twice through the general path (issue
    48). Anything else, and a text the fast form cannot encode, takes the general path.
    tests/unit/test_canonical_entry.py holds the two equal."""
    if type(content) is dict and content.keys() == _ENTRY_KEYS and content["artifacts"] == [] \
            and content["sources"] == [] and type(content["kind"]) is str and type(content["text"]) is str:
        try:
            return ('{"artifacts":[],"kind":' + _encode_string(nfc(content["kind"])) + ',"sources":[],"text":'
                    + _encode_string(nfc(content["text"])) + "}").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the general path words the refusal
            pass
    return canonical_bytes(content)


def entry_content_hash(content: Any) -> str:
    return sha256_hex(ENTRY_CONTENT_DOMAIN, _entry_content_bytes(content))


def artifact_content_hash(content: Any) -> str:
    return sha256_hex(ARTIFACT_CONTENT_DOMAIN, canonical_bytes(content))


def source_content_hash(content: Any) -> str:
    return sha256_hex(SOURCE_CONTENT_DOMAIN, canonical_bytes(content))


def embedding_content_hash(profile: Any, entry_hash: str) -> str:
    return sha256_hex(
        EMBEDDING_CONTENT_DOMAIN,
        canonical_bytes({"profile": profile, "entry_content_hash": entry_hash}),
    )


def embedding_hash_template(profile: Any) -> tuple[bytes, bytes] | None:
    """(prefix, suffix) with ``embedding_content_hash(profile, h) ==
    sha256(prefix + h + suffix)`` for every entry hash ``h`` of 64 lowercase hex digits
    (a JSON string no escaping or NFC changes), or None when the profile's canonical
    bytes cannot be split so (checked on a sample hash). The canonical bytes are made
    once, by the same encoder, around a placeholder hash."""
    placeholder = "0" * 64
    head, found, tail = canonical_bytes({"profile": profile, "entry_content_hash": placeholder}).partition(
        placeholder.encode("ascii"))
    if not found:
        return None
    prefix = EMBEDDING_CONTENT_DOMAIN + head
    check = "f" * 64
    if hashlib.sha256(prefix + check.encode("ascii") + tail).hexdigest() != embedding_content_hash(profile, check):
        return None
    return prefix, tail


def embedding_content_hasher(profile: Any) -> Callable[[str], str]:
    """``embedding_content_hash(profile, ·)`` for one profile, for checking every head
    row of a Memory: encoding the profile per row was 98 % of the first vector search
    after a reopen (4.4 s at 20k entries). Entry hashes that are 64 lowercase hex
    digits go through ``embedding_hash_template``; anything else takes the full path."""
    template = embedding_hash_template(profile)
    if template is None:
        return functools.partial(embedding_content_hash, profile)
    prefix, suffix = template

    def spliced(entry_hash: str) -> str:
        if not is_sha256_hex(entry_hash):
            return embedding_content_hash(profile, entry_hash)
        return hashlib.sha256(prefix + entry_hash.encode("ascii") + suffix).hexdigest()

    return spliced


# Compiled patterns: a commit checks every id of its manifest, and a per-character
# generator made that the largest cost of a one-entry commit to a 10k-entry Memory.
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_VALID_ID = re.compile(r"[\x21-\x7e]{1,%d}" % MAX_ID_LENGTH)


def is_sha256_hex(value: object) -> bool:
    return isinstance(value, str) and _SHA256_HEX.fullmatch(value) is not None


def is_valid_id(value: object) -> bool:
    """IDs are printable ASCII without spaces, 1..128 characters."""
    return isinstance(value, str) and _VALID_ID.fullmatch(value) is not None


# The same rules over a whole column at once, at C speed: the values joined by newlines
# (which neither alphabet admits) must be made of the alphabet and newlines only, hold
# exactly one newline fewer than there are values (no value hides a separator), and
# every value's length must be in range. A 10k-entry manifest is checked in about a
# millisecond instead of 20k Python calls.
_ID_ALPHABET = re.compile(r"[\x21-\x7e\n]*")
_HEX_ALPHABET = re.compile(r"[0-9a-f\n]*")


def _column_matches(alphabet: re.Pattern[str], values: Sequence[object], shortest: int, longest: int) -> bool:
    if not values:
        return True
    try:
        joined = "\n".join(values)  # type: ignore[arg-type]
    except TypeError:  # a value that is not a string
        return False
    lengths = list(map(len, values))  # type: ignore[arg-type]
    return (joined.count("\n") == len(values) - 1 and min(lengths) >= shortest and max(lengths) <= longest
            and alphabet.fullmatch(joined) is not None)


def all_valid_ids(values: Sequence[object]) -> bool:
    """``all(is_valid_id(v) for v in values)``, for a whole column at once."""
    return _column_matches(_ID_ALPHABET, values, 1, MAX_ID_LENGTH)


def all_sha256_hex(values: Sequence[object]) -> bool:
    """``all(is_sha256_hex(v) for v in values)``, for a whole column at once."""
    return _column_matches(_HEX_ALPHABET, values, 64, 64)


def mint_id(prefix: str) -> str:
    """A time-ordered unique id: prefix + 26 Crockford base32 chars (48-bit ms clock,
    80 random bits), so ids sort roughly by creation and never need coordination."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    # The 26 base-32 digits of the 128-bit value, most significant first, two at a
    # time (10 bits) from a table: a loop of 26 steps cost a 50k-entry remember() ~1 s
    # for its 100k ids.
    return prefix + "".join([_CROCKFORD_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])


class IdMinter:
    """Mints the three kinds of identifiers. Injectable so that tests and corpus
    loaders can choose readable ids; the service validates whatever it is given."""

    def artifact_id(self) -> str:
        return mint_id("mem_art_")

    def entry_id(self) -> str:
        return mint_id("mem_ent_")

    def entry_version_id(self) -> str:
        return mint_id("mem_ver_")


class SequentialIds(IdMinter):
    """Deterministic, readable ids (``mem_ent_atl_00001``): one counter per kind, an
    optional tag. For tests, corpus loaders and tutorials that must compare ids
    verbatim; the service validates them like any other."""

    def __init__(self, tag: str = "") -> None:
        self.tag = f"{tag}_" if tag else ""
        self._counters = {kind: itertools.count(1) for kind in ("art", "ent", "ver")}

    def _next(self, kind: str) -> str:
        return f"mem_{kind}_{self.tag}{next(self._counters[kind]):05d}"

    def artifact_id(self) -> str:
        return self._next("art")

    def entry_id(self) -> str:
        return self._next("ent")

    def entry_version_id(self) -> str:
        return self._next("ver")


def utf8_key(value: str) -> bytes:
    """Sort key for 'ascending UTF-8' ordering required by the RFC."""
    return value.encode("utf-8")
