"""A real, local OceanBase-kernel endpoint from the ``pylibseekdb`` wheel.

The wheel ships a ``seekdb`` server binary (OceanBase 4.3.5.x kernel, MySQL protocol)
next to its Python bindings. This module starts and stops that binary so tests,
notebooks and the evaluation harness all get an OceanBase endpoint the same way:

    with SeekdbServer(tmp_path / "seekdb") as server:     # ~1-1.5 s to ready
        svc = await pc.open(server.url_for("pc_test"))

    url, server = ensure_server(dir)   # honours POWERCONTEXT_OCEANBASE_URL first

    python -m powercontext.backends.seekdb start|status|stop|reset [--dir D] [--port P]

Without ``--dir`` the store is this checkout's own (``store.default_store``:
``POWERCONTEXT_SEEKDB_DIR``, else one per project folder).

Facts this code relies on (measured with seekdb 1.4.0.0 / ob_version() 4.3.5.3):

* Flags: ``--nodaemon --port P --base-dir D --parameter datafile_size=1G
  --parameter log_disk_size=2G --parameter memory_budget=2G``. ``log_disk_size`` below
  2G fails; ``memory_budget`` defaults to 80 % of RAM, so we always pass it. The data
  file is allocated up front: a base dir costs ~1.3 GB of disk.
* There is NO flag or parameter to choose the listen address: the server always listens
  on 0.0.0.0:P (``--parameter local_ip=…`` is silently ignored; the ``bind_address``
  variable only mirrors MySQL and shows ``*``). What does work is the tenant variable
  ``ob_tcp_invited_nodes`` (a client-IP allow-list); ``--variable
  ob_tcp_invited_nodes=…`` is overwritten during bootstrap. A fresh server's only
  account is ``root@%`` with an EMPTY password, and TCP and the unix socket
  ``run/sql.sock`` open within ~0.05 s of each other.
* Lockdown (see "Security" in OCEANBASE_NOTES.md): the first start of a directory
  generates a random root password, stores it in ``root.password`` (0600) in the base
  dir (0700), and bootstraps the server inside a private network namespace
  (``unshare --net`` with a veth pair: seekdb exits with status 1 if the namespace has
  only ``lo``), where no other host or local process can reach its TCP port. Through
  ``run/sql.sock`` (in the 0700 dir) it sets the password and the allow-list, stops
  the server, and starts it again on the host network: the password-less window is
  never reachable over TCP. Where a namespace cannot be made (no CAP_NET_ADMIN and no
  user namespaces, no ``ip``), the lockdown runs through the unix socket as soon as it
  accepts, and ``exposure_seconds`` records how long root had no password.
* The binary reports telemetry unless ``TELEMETRY_ENABLED=false`` is in its
  environment (measured: without it, a fresh start resolves the report host over DNS;
  with it, no outbound connection at all). The launcher always sets it. The binary
  still writes its local ``run/telemetry.json`` (inside the 0700 dir).
* SIGTERM makes seekdb log the signal and then kill itself with SIGKILL (exit status
  -9 within ~0.1 s). That is its normal stop; committed rows survive via redo replay.
* An invalid ``--parameter`` value (e.g. ``memory_budget=abc`` or ``=100M``) makes the
  binary exit with status 1 within ~0.1 s and write nothing to its logs, so the start
  error quotes the command line.
* If the port is taken, seekdb still allocates its 1 GB data file before failing
  (~1 s, "fail to start net frame"), so we check the port ourselves first.

pymysql is imported inside functions only: importing powercontext must stay cheap and
must work without the ``oceanbase`` extra installed.

Recovery (issue 35): a start killed half way — SIGKILL, or the SIGTERM ``timeout``
sends — must not leave the directory unusable or open a password-less window. The
first-start server in its private namespace dies with the process that started it (a
parent-death signal, set even for the CLI's detached start), a SIGTERM stops what was
launched, the host-network server's pid file is written as soon as it is launched, and
any other seekdb still holding the directory (found in /proc by its --base-dir) is what
``status`` reports, ``stop`` ends and ``start`` replaces. The lockdown counts as done
only once ``root.locked`` records it: a directory with a password but no record (its
first start was interrupted) goes through the private namespace again.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """``python -m powercontext.backends.seekdb start|stop|status|reset`` (see ``cli``)."""
    from .cli import run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
