"""The ``%pcmem`` / ``%%pcmem`` magics: one ``Magics`` class, one small method per
subcommand, each with its own ``magic_arguments`` parser.

``%pcmem SUBCOMMAND ARGS`` picks the method, parses ARGS with its parser (POSIX
quoting: ``"two words"`` is one argument), runs it and returns its result — a
DataFrame for reads, the new MemoryRevision for writes. ``-o NAME`` also stores the
result in the user namespace. User mistakes raise ``UsageError`` (one line, no
traceback); options are traitlets, e.g. ``%config PcMem.limit = 5``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import shlex
from typing import Any, Callable

import pandas as pd
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool, Enum, Int, Unicode, observe

from powercontext import AdmissionPolicy
from powercontext.backends.seekdb.store import default_store

from powercontext.suggest import unknown_name

from . import eval_options, policy_options, reads, refs, runtime, tables, writes
from .display import explain_hint, result_summary
from .errors import PcMemUserError, as_usage_errors
from .session import Session, redact
from .usage import help_text, usage_line, with_hint

__all__ = ["PcMem"]

MODES = ["fts", "vector", "hybrid", "auto"]


def subcommand(name: str, cell: bool = False, actions: bool = False) -> Callable:
    """Mark a method as ``%pcmem NAME``; ``cell=True`` accepts the ``%%pcmem`` form;
    ``actions=True``: ``NAME ACTION --help`` is the action's own help, not NAME's."""

    def mark(func: Callable) -> Callable:
        func.argcmd_name = f"pcmem {name}"  # the parser's prog; IPython's formatter adds the %
        func.subcommand = name
        func.takes_cell = cell
        func.has_actions = actions
        return func

    return mark


output = argument("-o", "--output", metavar="NAME", help="also store the result in the user namespace as NAME")
memory_refs = argument(
    "--memory", "-m", nargs="+", action="extend", default=[], metavar="REF",
    help="Memory id, unambiguous prefix or ID@REV (default: every Memory in the database)",
)


@magics_class
class PcMem(Magics, policy_options.PolicyTraits):
    """%pcmem: the PowerContext memory workbench. Besides the options below, one session
    default per admission policy field (``%config PcMem.hybrid_fts_min_terms = 3``, None:
    the policy's own value, ``off``: the field's family off), generated in
    ``policy_options``."""

    limit = Int(8, min=1, help="default --limit of search").tag(config=True)
    mode = Enum(MODES, default_value="auto", help="default --mode of search").tag(config=True)
    preview_width = Int(80, min=0, help="characters of entry text shown in tables (0 = all)").tag(config=True)
    hash_width = Int(12, min=4, help="characters of content hashes shown in tables").tag(config=True)
    kind = Unicode("fact", help="default --kind of remember").tag(config=True)
    database = Unicode("pcmem", help="database name used by `open --seekdb`").tag(config=True)
    seekdb_dir = Unicode("", help="server directory used by `open --seekdb` without DIR (default: this checkout's own "
                                  "store, seekdb.store.default_store)").tag(config=True)
    embedding = Unicode(None, allow_none=True, help="default --embedding of open (e.g. 'minilm')").tag(config=True)
    # Off by default: logged questions can hold secrets (powercontext/memory/search_log.py).
    search_log = Bool(False, help="open databases with the search log on (as `open --search-log`)").tag(config=True)
    # The session-wide admission thresholds (policy_options.PolicyTraits) become the open
    # service's policy, so search, --explain and the widgets share them. A policy fitted on
    # your own labels (harness.fit(...).save(path)); the thresholds, when set, still override it.
    policy_file = Unicode(None, allow_none=True,
                          help="JSON admission policy (AdmissionPolicy.save) the session searches with").tag(config=True)

    def __init__(self, shell=None, session: Session | None = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session = session or Session()
        self.commands = {
            func.subcommand: getattr(self, name)
            for name, func in vars(type(self)).items()
            if getattr(func, "subcommand", None)
        }

    # ------------------------------------------------------------------ dispatch

    @line_cell_magic
    def pcmem(self, line: str, cell: str | None = None) -> Any:
        """PowerContext memory workbench. `%pcmem help` lists the subcommands;
        `%pcmem SUBCOMMAND --help` shows one of them."""
        with as_usage_errors():
            name, rest = (line.split(None, 1) + ["", ""])[:2]
            if name in ("", "help", "-h", "--help"):
                return self._help(rest.strip())
            method = self.commands.get(name)
            if method is None:
                raise UsageError(unknown_name("subcommand", name, self.commands) + "; `%pcmem help` lists them")
            try:
                argv = shlex.split(rest)
            except ValueError as exc:
                raise UsageError(f"%pcmem {name}: {exc} (check the quotes)") from None
            asks_help = "-h" in argv or "--help" in argv
            if (asks_help and not method.has_actions) or (method.has_actions and argv[:1] in ([], ["-h"], ["--help"])):
                return self._help(name)
            if cell is not None and not method.takes_cell:  # before parsing: its complaint would mislead
                cells = ", ".join(f"%%pcmem {n}" for n in sorted(self.commands) if self.commands[n].takes_cell)
                raise UsageError(f"%%pcmem {name} has no cell form (only {cells} have one); "
                                 f"use the line magic %pcmem {name} …")
            try:
                args = method.parser.parse_args(argv)
            except UsageError as exc:
                raise UsageError(f"%pcmem {name}: {with_hint(method.parser, str(exc))} "
                                 f"(see %pcmem {name} --help)") from None
            result = method(args, cell)
            if getattr(args, "output", None) and result is not None:
                self.shell.user_ns[args.output] = result
            return result

    def _help(self, name: str) -> None:
        if name in self.commands:
            print(help_text(self.commands[name].parser))
            if self.commands[name].has_actions:
                print(f"\nactions (%pcmem {name} ACTION --help for one):\n{runtime.usage()}")
            return
        if name:
            raise UsageError(unknown_name("subcommand", name, self.commands))
        print("%pcmem SUBCOMMAND [ARGS] (SUBCOMMAND --help for details):")
        for key in sorted(self.commands):
            print("  " + usage_line(self.commands[key].parser))

    @property
    def svc(self):
        return self.session.service

    def run(self, awaitable):
        return self.session.run(awaitable)

    def _width(self) -> dict[str, int]:
        return {"width": self.preview_width}

    # ------------------------------------------------------------------ database

    @magic_arguments()
    @subcommand("open")
    @argument("target", nargs="?", metavar="TARGET", help="SQLite path, sqlite:///path.db, :memory: or oceanbase://user@host:port/db")
    @argument("--seekdb", nargs="?", const="", default=None, metavar="DIR",
              help="start (or attach to) a local seekdb server on DIR and open --database on it")
    @argument("--database", default=None, help="database name on the --seekdb server (default PcMem.database)")
    @argument("--embedding", default=None, help="embedding model: minilm, e5 or a sentence-transformers folder (enables vector/hybrid search)")
    @argument("--search-log", action="store_true", default=None,
              help="log every search in the database: question, hits, rejected candidates (default PcMem.search_log)")
    @argument("-o", "--output", metavar="NAME", help="store the opened MemoryService as NAME")
    def _open(self, args, cell):
        """Open a Memory database (closing the one open before)."""
        embedding = args.embedding or self.embedding
        args.search_log = bool(args.search_log or self.search_log)
        if args.seekdb is not None:
            if args.target:
                raise PcMemUserError("give either TARGET or --seekdb [DIR], not both (name the database with --database)")
            store = args.seekdb or self.seekdb_dir or str(default_store())
            svc = self.session.open_seekdb(store, args.database or self.database, embedding, search_log=args.search_log)
        elif args.target:
            svc = self.session.open(args.target, embedding, search_log=args.search_log)
        else:
            raise PcMemUserError(
                "open what? `%pcmem open memory.db`, `%pcmem open oceanbase://root@127.0.0.1:2881/pc` or `%pcmem open --seekdb`"
            )
        self._apply_policy()
        self.session.open_line = open_line(args, embedding)
        facts = self.session.describe()
        modes = "fts" + (" + vector/hybrid" if facts["hybrid"] else "")
        print(f"opened {facts['backend']} {facts['target']} · {facts['memories']} Memories · {modes}")
        if args.output:
            self.shell.user_ns[args.output] = svc
        return None

    @magic_arguments()
    @subcommand("close")
    def _close(self, args, cell):
        """Close the database (and stop a seekdb server that `open --seekdb` started)."""
        print("closed" if self.session.close() else "nothing was open")

    @magic_arguments()
    @subcommand("status")
    @output
    def _status(self, args, cell):
        """Backend, capabilities, embedding profile, known Memories and the current one."""
        facts = self.session.describe()
        return pd.DataFrame({"value": [str(v) for v in facts.values()]}, index=pd.Index(list(facts), name="field"))

    @magic_arguments()
    @subcommand("memories")
    @output
    def _memories(self, args, cell):
        """Every Memory: id, head Revision, active and inactive entry counts."""
        return tables.memories_frame(self.run(reads.heads(self.svc)))

    @magic_arguments()
    @subcommand("use")
    @argument("ref", nargs="?", default=None, metavar="REF", help="Memory id or unambiguous prefix (none: show the current one)")
    def _use(self, args, cell):
        """Make a Memory current: `remember` then writes to it and `manifest`, `changes`
        and `verify` read it when no REF is given."""
        if args.ref is None:
            print(f"current Memory: {self.session.describe()['current']}")
            return None
        head = self.run(refs.resolve_head(self.svc, args.ref))
        self.session.current = head.artifact_id
        m = head.manifest
        print(f"current Memory: {head.ref} · {len(m.active)} active · {len(m.inactive)} inactive")
        return None

    # ------------------------------------------------------------------ writes

    def _keep(self, args, value) -> None:
        """``-o NAME`` for a subcommand that displays nothing (its result is None)."""
        if getattr(args, "output", None):
            self.shell.user_ns[args.output] = value

    @magic_arguments()
    @subcommand("remember", cell=True)
    @argument("text", nargs="*", help="the entry text (quote it); the cell form takes one entry per paragraph")
    @argument("--memory", "-m", default=None, metavar="REF",
              help="Memory to write to (default: the current Memory; the first remember creates it)")
    @argument("--new", action="store_true", help="create a new Memory (it becomes the current one)")
    @argument("--kind", "-k", default=None, help="entry kind: fact, preference, decision, constraint, working_note …")
    @argument("--entry", default=None, metavar="ENTRY_ID", help="revise this entry instead of adding one")
    @argument("--source", action="append", default=[], metavar="NAME", help="persisted Source to cite as evidence")
    @argument("--reason", default=None, help="reason recorded with the change")
    @output
    def _remember(self, args, cell):
        """Add entries (or revise one with --entry); returns the new Revision."""
        texts = writes.paragraphs(cell) if cell is not None else [" ".join(args.text)]
        if cell is not None and args.text:
            raise PcMemUserError("the cell form takes the text from the cell body; drop the text on the magic line")
        if args.new and (args.memory or args.entry):
            raise PcMemUserError("--new creates a Memory: drop --memory/--entry, or drop --new to write to that Memory")
        memory, note = args.memory, None
        if memory is None and args.entry is None:
            memory, note = self.session.write_target(new=args.new)
        self.session.warm_model()
        revision, changed = self.run(writes.remember(
            self.svc, texts, kind=args.kind or self.kind, memory=memory, entry=args.entry,
            sources=args.source, reason=args.reason,
        ))
        if note:
            print(note)
        if memory is None and args.entry is None:
            self.session.current = revision.artifact_id
            print(f"created {revision.artifact_id} (now current; `%pcmem use REF` to switch)")
        if not changed:
            return self._unchanged(args, revision, "it already holds exactly that")
        return revision

    def _unchanged(self, args, head, why: str) -> None:
        """A no-op write: say so and show the head it left alone. Returning that
        Revision would display its own change list, which reads like what just happened."""
        m = head.manifest
        print(f"unchanged: {why}; no new Revision — the head stays {head.ref} · {len(m.active)} active · "
              f"{len(m.inactive)} inactive")
        self._keep(args, head)
        return None

    @magic_arguments()
    @subcommand("patch")
    @argument("entry", metavar="ENTRY_ID", help="entry id (or unambiguous prefix)")
    @argument("--old", required=True, help="the exact fragment to replace; it must occur exactly once")
    @argument("--new", required=True, help="its replacement (\"\" deletes the fragment)")
    @argument("--memory", "-m", default=None, metavar="REF", help="the Memory (default: search every Memory)")
    @argument("--source", action="append", default=[], metavar="NAME", help="persisted Source to cite as evidence")
    @argument("--reason", default=None, help="reason recorded after the patch's offset and length delta")
    @output
    def _patch(self, args, cell):
        """Revise an entry by replacing one unique fragment; returns the new Revision."""
        self.session.warm_model()
        return self.run(writes.patch(self.svc, args.entry, args.old, args.new, memory=args.memory,
                                     sources=args.source, reason=args.reason))

    def _set_state(self, op: str, args):
        if op == "reactivate":
            self.session.warm_model()  # a reactivated entry is embedded again
        revision, changed = self.run(writes.set_state(self.svc, op, args.entries, memory=args.memory, reason=args.reason))
        if not changed:
            state = "inactive" if op == "forget" else "active"
            these = "the entry is" if len(args.entries) == 1 else "the entries are"
            return self._unchanged(args, revision, f"{these} already {state}")
        return revision

    @magic_arguments()
    @subcommand("forget")
    @argument("entries", nargs="+", metavar="ENTRY_ID", help="entry ids (or unambiguous prefixes)")
    @argument("--memory", "-m", default=None, metavar="REF", help="the Memory (default: search every Memory)")
    @argument("--reason", default=None, help="reason recorded with the change, e.g. user_requested")
    @output
    def _forget(self, args, cell):
        """Mark entries inactive in a new Revision."""
        return self._set_state("forget", args)

    @magic_arguments()
    @subcommand("reactivate")
    @argument("entries", nargs="+", metavar="ENTRY_ID", help="entry ids (or unambiguous prefixes)")
    @argument("--memory", "-m", default=None, metavar="REF", help="the Memory (default: search every Memory)")
    @argument("--reason", default=None, help="reason recorded with the change")
    @output
    def _reactivate(self, args, cell):
        """Mark inactive entries active again in a new Revision."""
        return self._set_state("reactivate", args)

    # ------------------------------------------------------------------ reads

    @magic_arguments()
    @subcommand("manifest")
    @argument("ref", nargs="?", default=None, metavar="REF",
              help="Memory id, prefix or ID@REV (default: the current Memory); without @REV its head")
    @argument("--diff", action="store_true", help="only the rows that changed since the previous Revision")
    @argument("--state", choices=["all", "active", "inactive"], default="all")
    @output
    def _manifest(self, args, cell):
        """The manifest of a Revision: entry_id, version, state, kind, text, hash."""
        ref = self.session.current_ref(args.ref, "manifest of which Memory?")
        if args.diff:
            return self.run(reads.manifest_diff(self.svc, ref, hash_width=self.hash_width, **self._width()))
        return self.run(reads.manifest(self.svc, ref, state=args.state, hash_width=self.hash_width, **self._width()))

    @magic_arguments()
    @subcommand("lineage")
    @argument("entry", metavar="ENTRY_ID", help="entry id or unambiguous prefix")
    @memory_refs
    @output
    def _lineage(self, args, cell):
        """An entry's versions and state changes across Revisions, with reasons and evidence."""
        return self.run(reads.lineage(self.svc, args.entry, args.memory, **self._width()))

    @magic_arguments()
    @subcommand("changes")
    @argument("ref", nargs="?", default=None, metavar="REF",
              help="Memory id, prefix or ID@REV (default: the current Memory's head)")
    @argument("--since", type=int, default=None, metavar="N",
              help="Revisions after N (0 = whole history; default: only REF's Revision)")
    @output
    def _changes(self, args, cell):
        """Compact per-Revision changes."""
        ref = self.session.current_ref(args.ref, "changes of which Memory?")
        return self.run(reads.changes(self.svc, ref, args.since))

    @magic_arguments()
    @subcommand("verify")
    @argument("ref", nargs="?", default=None, metavar="REF",
              help="Memory id or prefix (default: the current Memory); its whole history is checked")
    @output
    def _verify(self, args, cell):
        """Check a Memory's whole history against its hashes; one row per mismatch."""
        return self.run(reads.verify(self.svc, self.session.current_ref(args.ref, "verify which Memory?")))

    @magic_arguments()
    @subcommand("maintain")
    @argument("--timeout", type=float, default=900.0, metavar="S", help="seconds at most, waits included (default 900)")
    @argument("--settle", type=float, default=None, metavar="S",
              help="searches must stop getting faster for S seconds (default: scaled to the size, 3 s for a few "
                   "entries up to 60 s from 10k rows; 0: do not wait)")
    @output
    def _maintain(self, args, cell):
        """Server upkeep after a bulk load (OceanBase: a minor and a major compaction; SQLite:
        the full-text index merged, the WAL checkpointed), then wait until searches settle."""
        report = self.run(self.svc.maintain(timeout=args.timeout, settle=args.settle))
        print(report)
        return report if args.output else None

    @magic_arguments()
    @subcommand("migrate")
    @argument("--embedding", required=True,
              help="the model to move to: minilm, e5 or a sentence-transformers folder of the same dimension")
    @argument("--batch-size", type=int, default=64, metavar="N", help="texts per embedding call (default 64)")
    @output
    def _migrate(self, args, cell):
        """Re-embed every head row of every Memory with another model, then rewrite the vectors
        and record its profile in one transaction (a failure keeps the old model's vectors)."""
        report = self.run(self.svc.migrate_embedding(args.embedding, batch_size=args.batch_size))
        self._apply_policy()  # the new profile's default, or %config's file and thresholds
        self.session.open_line = with_embedding(self.session.open_line, args.embedding)
        print(report)
        return report if args.output else None

    @observe(*policy_options.CONFIG_NAMES)
    def _thresholds_changed(self, change) -> None:
        try:  # a value the policy refuses is refused when it is set, not at the next search
            dataclasses.replace(AdmissionPolicy(), **policy_options.config_overrides(self))
            self._apply_policy()
        except (ValueError, UsageError) as exc:
            self.set_trait(change["name"], change["old"])
            raise UsageError(f"PcMem.{change['name']}: {' '.join(str(exc).split())}") from None

    @observe("policy_file")
    def _policy_file_changed(self, change) -> None:
        try:
            self._file_policy()  # a bad file is refused when it is set, not at the next search
        except UsageError:
            self.set_trait("policy_file", change["old"])  # keep searching with the policy that worked
            raise
        self._apply_policy()

    def _file_policy(self, profile=None) -> AdmissionPolicy:
        """The policy of ``policy_file``, or without one the default of the open
        database's embedding profile (E5's thresholds are not MiniLM's)."""
        if not self.policy_file:
            return AdmissionPolicy.default_for(profile)
        try:
            return AdmissionPolicy.load(self.policy_file)
        except ValueError as exc:  # InvalidMemoryRequestError: missing, unreadable or invalid
            raise UsageError(f"PcMem.policy_file: {' '.join(str(exc).split())}") from None

    def _apply_policy(self) -> None:
        """Make the %config policy file and thresholds the open service's policy."""
        session = getattr(self, "session", None)  # config is applied before __init__ ends
        svc = None if session is None else session.svc
        if svc is None:
            return
        svc.policy = dataclasses.replace(self._file_policy(svc.backend.embedding_profile),
                                         **policy_options.config_overrides(self))

    @magic_arguments()
    @subcommand("search")
    @argument("query", nargs="+", help="the query (quote it)")
    @memory_refs
    @argument("--mode", choices=MODES, default=None, help="default PcMem.mode")
    @argument("--limit", type=int, default=None, help="hits at most, ≥ 1 (default PcMem.limit)")
    @argument("--explain", action="store_true",
              help="every retrieved candidate per channel with its signals, admitted or rejected and why")
    @output
    def _search(self, args, cell):
        """Search Memories at their heads; hits, or with --explain every admission decision.
        Every admission policy field is an option (below); one that cannot decide this
        search (another mode's floor, a family the policy does not use) is refused."""
        mode = args.mode or self.mode
        options, planned, policy = policy_options.for_search(args, mode, self.svc)
        if mode != "fts":
            self.session.warm_model()
        result, frame = self.run(reads.search(
            self.svc, " ".join(args.query), args.memory, mode=mode,
            limit=self.limit if args.limit is None else args.limit,  # 0 is refused like -3, not replaced
            policy=policy, explain=args.explain, **self._width(),
        ))
        for note in policy_options.fallback_notes(options, self.svc.policy, planned, result.mode):
            print(note)
        extra = f" · {len(frame)} candidates, {int(frame['admitted'].sum())} admitted" if args.explain else ""
        print(result_summary(result) + extra)
        hint = explain_hint(result, "%pcmem search " + shlex.join(args.query))
        if hint:
            print(hint)
        return frame

    # ------------------------------------------------------------------ harness and widgets

    @magic_arguments()
    @subcommand("eval")
    @argument("--dataset", required=True, metavar="PATH",
              help="a corpus folder, or a bundled corpus by name (atlas-etl, harbor-web, lantern-relay, tidewater-cli)")
    @argument("--backends", default="sqlite", help="comma separated: sqlite,oceanbase")
    @argument("--no-progress", action="store_true", help="no progress bars (they go to stderr)")
    @output
    def _eval(self, args, cell):
        """Run the threshold-evaluation harness and return its summary; --quick,
        --families, --limits and --modes sweep a smaller grid (as `sweep` names them)."""
        try:
            from powercontext.eval.errors import EvalError
            from powercontext.eval.harness import summary
        except ImportError:
            print("the evaluation harness needs the eval extra: pip install 'powercontext[eval]'")
            return None
        backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        options = eval_options.sweep_options(args)  # refused before the harness loads anything
        try:
            return summary(args.dataset, backends=backends, progress=not args.no_progress, **options)
        except EvalError as exc:  # a missing folder, an unreachable server: the user's to fix
            raise PcMemUserError(f"eval: {exc}") from None

    @magic_arguments()
    @subcommand("inspect")
    @argument("widget", choices=["manifest", "lineage", "admission"])
    @argument("refs", nargs="*", metavar="REF|QUERY",
              help="manifest, lineage: the Memory; admission: the query (quote it) and any Memories to search "
                   "(mem_art_… ids; default: every Memory)")
    @argument("--mode", choices=MODES, default=None, help="admission: the search mode (default PcMem.mode)")
    @argument("--limit", type=int, default=None, help="admission: hits at most (default PcMem.limit)")
    @output
    def _inspect(self, args, cell):
        """An interactive widget on the open database: `%pcmem inspect admission "the
        question" [--mode hybrid]` opens the AdmissionInspector on that query."""
        from . import widgets

        argv = ["%pcmem", "inspect", args.widget, *args.refs, *(["--mode", args.mode] if args.mode else [])]
        reopen = f"`{self.session.open_line}`, then `{shlex.join(argv)}`"
        if args.widget == "admission":
            # a Memory is named by its id; every other word is the query's
            memories = [w for w in args.refs if w.startswith("mem_art_")]
            query = " ".join(w for w in args.refs if not w.startswith("mem_art_"))
            limit = self.limit if args.limit is None else args.limit
            if not 1 <= limit <= 50:
                raise PcMemUserError(f"--limit must be within 1..50 for the inspector, got {limit}")
            return widgets.AdmissionInspector(self.svc, memories, runner=self.session.runner, reopen=reopen,
                                              query=query, mode=args.mode or self.mode, limit=limit)
        if args.mode is not None or args.limit is not None:
            raise PcMemUserError(f"--mode and --limit are options of `%pcmem inspect admission`, not of {args.widget}")
        if len(args.refs) != 1:
            raise PcMemUserError(f"`%pcmem inspect {args.widget}` takes exactly one Memory REF")
        cls = widgets.ManifestInspector if args.widget == "manifest" else widgets.LineageExplorer
        return cls(self.svc, args.refs[0], runner=self.session.runner, reopen=reopen)

    @magic_arguments()
    @subcommand("judge")
    @argument("folder", metavar="FOLDER", help="a pool folder (python -m powercontext.eval pool …)")
    @argument("--judge", default="default", metavar="NAME",
              help="judge under this name (default: default); a second judge judges the folder independently")
    @argument("--show-channels", action="store_true",
              help="once a question is judged, show which channels found each candidate and its best rank")
    @argument("--order", choices=("sample", "uncertainty", "file"), default="sample",
              help="sample (default): a seeded random order, the same for every judge; uncertainty: the questions "
                   "whose admission is least certain first; file: as pooled")
    @output
    def _judge(self, args, cell):
        """Judge a pool folder's questions one at a time (every click saved at once; resumes)."""
        from .widgets import JudgeWidget

        return JudgeWidget(args.folder, judge=args.judge, show_channels=args.show_channels, order=args.order)

    @magic_arguments()
    @subcommand("runtime", cell=True, actions=True)
    @argument("action", metavar="ACTION", help=" | ".join(runtime.ACTIONS))
    @argument("rest", nargs=argparse.REMAINDER, metavar="ARGS",
              help="the action's arguments (`%%pcmem runtime ACTION --help` lists them)")
    def _runtime(self, args, cell):
        """The local Runtime (RFC 001): open, capture Sources, flush windows, journal, bindings,
        entries and search of a scope's Memory, status, inspect, close."""
        return runtime.run_action(self, args.action, args.rest, cell)


def open_line(args, embedding: str | None) -> str:
    """The ``%pcmem open …`` line that opens the same database again (password masked)."""
    if args.seekdb is not None:
        parts = ["--seekdb"] + ([args.seekdb] if args.seekdb else []) + (["--database", args.database] if args.database else [])
    else:
        parts = [redact(args.target)]
    parts += ["--embedding", embedding] if embedding else []
    return shlex.join(["%pcmem", "open", *parts, *(["--search-log"] if getattr(args, "search_log", False) else [])])


def with_embedding(line: str | None, embedding: str) -> str | None:
    """An ``open_line`` that reopens the database with ``embedding`` after a migration."""
    if line is None:
        return None
    words = shlex.split(line)
    if "--embedding" in words:
        at = words.index("--embedding")
        del words[at:at + 2]
    return shlex.join([*words, "--embedding", embedding])


def _document() -> None:
    """Put every subcommand's usage line into the ``%pcmem?`` docstring."""
    methods = sorted((f for f in vars(PcMem).values() if getattr(f, "subcommand", None)), key=lambda f: f.subcommand)
    lines = [inspect.cleandoc(PcMem.pcmem.__doc__), "", "Subcommands::", ""]
    lines += ["  " + usage_line(f.parser) for f in methods]
    lines += ["", "Options: %config PcMem (limit, mode, preview_width, hash_width, kind, database, seekdb_dir, embedding, "
              "search_log, policy_file, and one per admission policy field: "
              f"{', '.join(policy_options.CONFIG_NAMES)})."]
    PcMem.pcmem.__doc__ = "\n".join(lines)


policy_options.add_arguments(PcMem._search.parser)  # one option per policy field, before _document reads the parser
eval_options.add_arguments(PcMem._eval.parser)  # the sweep's grid options, named as the CLI names them
_document()
