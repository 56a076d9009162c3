"""OceanBase upkeep for ``svc.maintain()`` (maintenance.py): a minor freeze, a wait
until this database's frozen memtables are dumped, then a major freeze and a wait until
the major compaction is done. Measured on seekdb (OCEANBASE_NOTES.md, "Compaction"): a
major freeze issued before the dump changed nothing, one issued after it made a fresh
10k load's searches ~2× faster. Mixin of OceanBaseMemoryBackend."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

from ...errors import MaintenanceNotPermittedError
from ..maintenance import MaintenanceStep

POLL_S = 1.0
# Seconds without a newer freeze showing, the compaction idle, before MAJOR FREEZE is
# asked again (a freeze shows within a second or two when nothing else runs).
REFREEZE_S = 15.0
# MySQL codes of a refused privilege: 1227 (needs a privilege), 1044 (database), 1142 (table),
# 1045 (account), 1370 (routine)
ACCESS_DENIED = {1227, 1044, 1142, 1045, 1370}
_FROZEN_MEMTABLES = (
    "SELECT COUNT(*) FROM oceanbase.V$OB_SSTABLES WHERE TABLE_TYPE = 'MEMTABLE' AND IS_ACTIVE = 'NO' "
    "AND TABLET_ID IN (SELECT tablet_id FROM oceanbase.__all_tablet_to_table WHERE table_id IN "
    "(SELECT object_id FROM oceanbase.DBA_OBJECTS WHERE owner = %s))")


class ServerUpkeep:
    upkeep_settles = True  # the compaction's effect on searches shows after it reports done

    def _maintenance_steps(self, deadline: float) -> Iterator[MaintenanceStep]:
        started = time.monotonic()
        self._alter_system("MINOR FREEZE")
        dumped = self._wait_until(lambda cur: self._scalar(cur, _FROZEN_MEMTABLES, (self.database,)) == 0, deadline)
        yield MaintenanceStep("minor freeze, frozen memtables dumped", time.monotonic() - started,
                              "" if dumped else "the dump was not seen (no access to the views, or the deadline)")
        started = time.monotonic()
        # A major compaction already under way (the server starts one by itself once a
        # bulk load's dumps reach major_compact_trigger) must end first: a MAJOR FREEZE
        # issued while one is pending or running is accepted and merged into it, so no
        # newer freeze ever showed and the wait ran to the deadline (seekdb, a 10k load:
        # 893 s). That one may also have begun before the dump this one is for.
        self._wait_until(lambda cur: self._major_state(cur)[2] in ("IDLE", ""), deadline)
        frozen = self._major_state()[0]
        self._alter_system("MAJOR FREEZE")
        asked = [time.monotonic()]

        def compacted(cur) -> bool:
            now_frozen, last, status = self._major_state(cur)
            if now_frozen is not None and frozen is not None and now_frozen > frozen:
                return last >= now_frozen and status == "IDLE"
            if status == "IDLE" and time.monotonic() - asked[0] > REFREEZE_S:
                # still no newer freeze: one the server began between the wait above and
                # ours swallowed it; ask again
                cur.execute("ALTER SYSTEM MAJOR FREEZE")
                asked[0] = time.monotonic()
            return False
        done = self._wait_until(compacted, deadline)
        yield MaintenanceStep("major freeze, compaction done", time.monotonic() - started,
                              "" if done else "the compaction's end was not seen (no access to the views, or the deadline)")

    def _alter_system(self, what: str) -> None:
        con = self._connection()
        try:
            with con.cursor() as cur:
                cur.execute(f"ALTER SYSTEM {what}")
        except self._pymysql.err.MySQLError as exc:
            if exc.args and exc.args[0] in ACCESS_DENIED:
                raise MaintenanceNotPermittedError(
                    f"the account {self._params['user']!r} may not compact this OceanBase server: ALTER SYSTEM "
                    f"{what} was refused ({exc.args[-1]}). Nothing was changed; searches stay correct and the "
                    "server compacts by itself daily (major_freeze_duty_time). Ask its administrator for the "
                    "ALTER SYSTEM privilege, or to run ALTER SYSTEM MINOR FREEZE, then MAJOR FREEZE once "
                    "the minor one is done") from None
            raise

    def _major_state(self, cur: Any = None) -> tuple[int | None, int, str]:
        """(FROZEN_SCN, LAST_SCN, STATUS) of the tenant's major compaction; (None, 0, '')
        when the view cannot be read."""
        def read(c):
            c.execute("SELECT FROZEN_SCN, LAST_SCN, STATUS FROM oceanbase.DBA_OB_MAJOR_COMPACTION")
            row = c.fetchone()
            return (int(row[0]), int(row[1]), str(row[2])) if row else (None, 0, "")
        if cur is not None:
            return read(cur)
        try:
            with self._connection().cursor() as c:
                return read(c)
        except self._pymysql.err.MySQLError:
            return None, 0, ""

    @staticmethod
    def _scalar(cur, sql: str, params: tuple) -> Any:
        cur.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else row[0]

    def _wait_until(self, condition: Callable[[Any], bool], deadline: float) -> bool:
        """Poll ``condition(cursor)`` every POLL_S until it holds (True) or the deadline
        passes or the views it reads cannot be read (False)."""
        while True:
            try:
                with self._connection().cursor() as cur:
                    if condition(cur):
                        return True
            except self._pymysql.err.MySQLError:
                return False
            if time.monotonic() + POLL_S > deadline:
                return False
            time.sleep(POLL_S)
