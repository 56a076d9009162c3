"""The analyzer and embedding-profile records a write checks inside its transaction.
Mixin of DatabaseMemoryBackend.

Another process may migrate the analyzer or the embedding model while this handle is
open; a write through it would then analyze or embed with the old one. A commit reads
the records after its head CAS, while its transaction holds the head row: an embedding
migration rewrites the profile record and then locks every head (``ROW_LOCK``,
rebuild.py), so either it waited for the commit and re-embeds what the commit wrote,
or the commit reads the profile it committed and refuses. A new Memory has no head
row to meet the migration at, so its commit locks the profile record itself. Read
before the CAS, as it once was, a migration on OceanBase (whose plain reads lock
nothing) could commit in between and leave the commit's old-model vectors among the
new ones while verify() said all was well (issue 43).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import AnalyzerMismatchError, EmbeddingProfileMismatchError
from .rules import check_analyzer


class SchemaRecords:
    def _check_stored_schema(self, tx: Any, lock: bool = False) -> None:
        """Inside a write: the database still uses the analyzer this handle analyzes
        with and the embedding profile it embeds with (another process may have
        migrated either since we opened it). Both records in one statement: on
        OceanBase each statement is a round trip. ``lock``: hold them until the end."""
        stored = self._read_schema_values(tx, ("analyzer", "embedding_profile"), lock=lock)
        self._check_analyzer_record(stored.get("analyzer"))
        self._check_profile_record(stored.get("embedding_profile"))

    def _check_profile_record(self, recorded: str | None) -> None:
        """A handle whose profile is not the database's any more would embed with the
        old model and compare with the new one's vectors: one profile per search."""
        mine = self.embedding_profile
        if mine is None:  # writes no vectors and searches full text only: nothing to mix
            return
        if recorded is not None and (recorded == self._profile_text() or json.loads(recorded) == mine.to_canonical()):
            return
        now = "no embedding profile" if recorded is None else f"embedding profile {json.loads(recorded)['profile_id']!r}"
        raise EmbeddingProfileMismatchError(
            f"the {self.name} database was migrated to {now} after this handle opened it with "
            f"{mine.profile_id!r}: close it and reopen it with the new embedding"
        )

    def _profile_text(self) -> str:
        """This handle's profile as the schema records it (the same JSON both backends write)."""
        profile = self.embedding_profile
        if getattr(self, "_profile_text_of", (None,))[0] is not profile:
            self._profile_text_of = (profile, json.dumps(profile.to_canonical(), sort_keys=True))
        return self._profile_text_of[1]

    def _check_analyzer_record(self, recorded: str | None) -> None:
        if recorded != self.analyzer.version:
            check_analyzer(recorded, f"{self.name} database", None)
            raise AnalyzerMismatchError(
                f"the {self.name} database was migrated to analyzer {recorded} after this handle opened it "
                f"with {self.analyzer.version}: close and reopen it"
            )
