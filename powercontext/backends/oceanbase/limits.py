"""OceanBase's ``max_allowed_packet``: a statement larger than it is refused by the
server mid-transaction with a raw driver error. Each statement's size is estimated
before it is sent and an oversized one is refused with ServerLimitError naming the
limit (the transaction rolls back: nothing is written). Batches (manifest chunks, a
commit's versions and head rows, the head rows of a rebuild) go in multi-row INSERTs
kept under the same limit."""

from __future__ import annotations

from typing import Any, Sequence

from ...errors import ServerLimitError
from ..driver import pyformat

PACKET_MARGIN = 4096  # protocol header and statement framing around the SQL text


# pymysql escapes these with a backslash (converters._escape_table): each adds a byte
_ESCAPED = ("\\", "'", '"', "\n", "\r", "\0", "\x1a")


def _wire_size(value: Any) -> int:
    """Bytes a parameter takes in the statement pymysql sends: a string quoted, UTF-8
    encoded and with every escaped character doubled (a JSON change list is ~12 %
    quotes, so ignoring them let a 100k-entry commit past the check and into the
    server's raw refusal); bytes as ``_binary X'hex'``."""
    if isinstance(value, str):
        size = len(value) if value.isascii() else len(value.encode("utf-8"))
        return size + 2 + sum(map(value.count, _ESCAPED))
    if isinstance(value, (bytes, bytearray)):
        return 2 * len(value) + 11
    return 24


class PacketLimit:
    """Mixin of OceanBaseMemoryBackend; ``max_allowed_packet`` is read from the server
    at open (and may be lowered in tests)."""

    max_allowed_packet: int = 1 << 20

    def _check_packet(self, sql: str, params: Sequence[Any]) -> None:
        """Refuse, before sending, a statement the server would refuse as larger than
        its max_allowed_packet (the transaction then rolls back: nothing is written)."""
        size = len(sql) + sum(_wire_size(p) for p in params)
        if size > self.max_allowed_packet - PACKET_MARGIN:
            raise ServerLimitError(
                f"a statement of {size:,} bytes exceeds the OceanBase server's max_allowed_packet "
                f"({self.max_allowed_packet:,} bytes): nothing was written. Split the batch or the Source, "
                "or raise max_allowed_packet on the server",
                "max_allowed_packet", self.max_allowed_packet,
            )

    def _insert_chunks(self, tx, chunks):
        self._insert_many(tx, "INSERT INTO artifact_manifest_chunks (chunk_key, content) VALUES (%s, %s) "
                          "ON DUPLICATE KEY UPDATE chunk_key = chunk_key", list(chunks.items()))

    def _insert_many(self, tx, sql, rows):
        """One INSERT … VALUES statement per packet's worth of ``rows``: each row is
        checked against the limit, and the rows are sent as few multi-row INSERTs (on
        OceanBase each statement is a round trip, and a row sent alone cost ~0.7–1.7 ms
        against ~0.4 ms in a multi-row INSERT at 1k rows)."""
        for row in rows:
            self._check_packet(sql, row)
        # pymysql sends executemany as multi-row INSERTs of at most max_stmt_length bytes
        tx.max_stmt_length = min(1024000, self.max_allowed_packet - PACKET_MARGIN)
        tx.executemany(pyformat(sql), rows)

