"""%pcmem IPython magics and widgets (installed as powercontext.magics).

    %load_ext powercontext.magics
    %pcmem open memory.db
    %pcmem remember --kind preference "Run make test before every push."
    %pcmem search "what must I run before a push?"

Subcommands (``%pcmem help``; ``%pcmem NAME --help`` for one):

* ``open`` TARGET | --seekdb [DIR] [--embedding minilm] / ``close`` / ``status``
* ``memories`` — every Memory with its head Revision and entry counts
* ``use`` [REF] — make a Memory current (no REF: show the current one)
* ``remember`` [--memory REF | --new] --kind KIND "text" (cell form: one entry per
  paragraph; --entry ENTRY_ID revises) — writes to the current Memory; the first
  ``remember`` creates it / ``forget`` and ``reactivate`` ENTRY_ID… --reason R
* ``patch`` ENTRY_ID --old "fragment" --new "replacement" — replace one unique fragment
* ``manifest`` [REF[@REV]] [--diff] / ``lineage`` ENTRY_ID / ``changes`` [REF] --since N
* ``verify`` [REF] — check a Memory's whole history against its hashes, list mismatches
* ``migrate`` --embedding e5|minilm|FOLDER — re-embed every Memory with another model (one transaction)
* ``maintain`` [--timeout S] [--settle S] — server upkeep after a bulk load (OceanBase compacts), then wait until searches settle
* ``search`` "query" [--memory REF…] [--mode fts|vector|hybrid|auto] [--limit N]
  [--explain] and one option per admission policy field (the list at the end, generated
  from ``powercontext.memory.policy_fields``; ``off`` switches a field's family off). An
  option that cannot decide the search (``--fts-min-terms`` in hybrid mode when the policy
  has ``hybrid_fts_min_terms``; ``--vector-min-cosine`` in fts mode; a family the policy
  does not use) is refused with the reason; ``%config PcMem.<field>`` sets a session default
* ``eval`` --dataset PATH|NAME [--backends sqlite,oceanbase] — the harness summary, with
  a progress bar (a bundled corpus by name: ``--dataset atlas-etl``)
* ``inspect`` manifest|lineage REF / ``inspect admission`` "query" [REF…] [--mode M] [--limit N]
  — the widgets on the open database (the AdmissionInspector has a control per policy
  field that decides the search in view)
* ``judge`` FOLDER [--judge NAME] [--show-channels] — judge a pool's candidates (0/1/2, nothing answers, skip, note); every click saved
* ``runtime`` open|capture|flush|journal|bindings|status|inspect|close — the local Runtime
  (RFC 001): scoped Sources, windows, the JournalInspector

REF is a ``mem_art_…`` id, an unambiguous prefix of one, or ``ID@REV``; without
``@REV`` the current head is used; where REF is optional it defaults to the current
Memory. Only ``remember`` and ``runtime`` have a ``%%pcmem`` cell form. Reads return DataFrames, writes the new
MemoryRevision; ``-o NAME`` also stores the result. Options: ``%config PcMem``.
``current_service()`` returns the MemoryService the magics opened, for the widgets in
``powercontext.magics.widgets`` or for direct calls via ``current_runner().run(...)``.
"""

from __future__ import annotations

from typing import Any

from .errors import PcMemUserError
from powercontext.loop import LoopRunner, default_runner
from .magic import PcMem
from .policy_options import options_help
from .session import Session

__doc__ = f"{__doc__}\n{options_help()}\n"

__all__ = [
    "PcMem", "Session", "LoopRunner", "default_runner", "load_ipython_extension", "unload_ipython_extension",
    "current_magics", "current_service", "current_runner",
]


def load_ipython_extension(ip) -> None:
    """``%load_ext powercontext.magics``: register %pcmem and the rich displays."""
    from .display import register_formatters

    ip.register_magics(PcMem(shell=ip))
    register_formatters(ip)


def unload_ipython_extension(ip) -> None:
    """``%unload_ext powercontext.magics``: close what the magics opened."""
    from .display import unregister_formatters

    magics = ip.magics_manager.registry.pop("PcMem", None)
    if magics is not None:
        if getattr(magics, "runtime_session", None) is not None:
            magics.runtime_session.close(magics.session.runner)
        magics.session.close()
        for kind in ("line", "cell"):
            ip.magics_manager.magics[kind].pop("pcmem", None)
        if magics in ip.configurables:
            ip.configurables.remove(magics)
    unregister_formatters(ip)


def current_magics(shell: Any = None) -> PcMem:
    """The loaded PcMem instance of ``shell`` (default: the running IPython)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    magics = shell.magics_manager.registry.get("PcMem") if shell is not None else None
    if magics is None:
        raise PcMemUserError("the magics are not loaded: run `%load_ext powercontext.magics` first")
    return magics


def current_service(shell: Any = None):
    """The MemoryService that ``%pcmem open`` opened."""
    return current_magics(shell).session.service


def current_runner(shell: Any = None) -> LoopRunner:
    """The private-loop runner the magics use (run the service's coroutines with it)."""
    return current_magics(shell).session.runner
