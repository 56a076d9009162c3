"""``python -m powercontext.eval``: the threshold-evaluation harness CLI.

    python -m powercontext.eval sweep --all --backends sqlite,oceanbase
    python -m powercontext.eval sweep --dataset my-corpus --modes fts --folds 5 --out results/mine
    python -m powercontext.eval analyzers --all --analyzers v1,v2 --out results/analyzers
    python -m powercontext.eval run --dataset datasets/atlas-etl --policy fts_min_coverage=0.4 --limit 8
    python -m powercontext.eval validate my-corpus [--style bundled]
    python -m powercontext.eval import locomo|longmemeval|beir|trec SRC OUT
    python -m powercontext.eval cleanup [--store DIR] [--kept]
    python -m powercontext.eval judge FOLDER --import QRELS [--judge NAME]
    python -m powercontext.eval agreement FOLDER
    python -m powercontext.eval pool DB_OR_URL --out FOLDER (--from-log [--since T] | --questions FILE)
    python -m powercontext.eval export FOLDER --out CORPUS [--judge NAME]
    python -m powercontext.eval calibrate --dataset my-corpus --embedding e5 --out FOLDER
    python -m powercontext.eval probability-study --all --embeddings minilm,e5 --out FOLDER

``sweep`` loads every corpus into a fresh database per backend (starting a local
seekdb for OceanBase unless POWERCONTEXT_OCEANBASE_URL names a server), retrieves each
query once per mode, replays the policy grid offline, recommends a policy per mode
(by 5-fold cross-validation below 200 queries), writes the run folder and prints the
summary table, the wall time and peak memory, and where report.html is; its
databases are created with ``--analyzer`` (v2 by default). ``analyzers`` runs that
sweep once per analyzer and writes the figures side by side (``analyzers.md``). ``run``
evaluates one policy through ``admission.fuse`` itself. ``validate`` checks corpus
folders without running anything (``--style bundled`` adds the bundled corpora's
conventions). ``import`` turns a public benchmark (LoCoMo-10, LongMemEval, a BEIR
folder, a TREC collection) into a corpus folder with a datasheet stub; see
``powercontext.eval.corpora.importers``. A corpus with errors is refused with every problem as ``file:line:
what`` and exit code 2; a corpus that only breaks the bundled corpora's house style
runs (a bundled one with a line saying how many style notes it has). ``cleanup`` drops
the ``pc_eval_*`` databases no live run of the seekdb store claims (those of killed
runs; the next run drops a killed run's databases too), says what it dropped, and stops
a server runs started that no live run uses; databases kept with ``--keep-databases``
stay unless ``--kept`` is given.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

from .running.databases import BACKENDS
from . import calibrate_cli
from .judging import cli_judge
from .scoring.metrics import METRIC_NAMES
from .scoring.grid import QUICK_FAMILIES
from .scoring.sweep import INITIAL, MODES, Grid

_DEFAULT_GRID = Grid()
#: ``sweep --quick`` (``make eval-quick``): one model, SQLite, three of the bundled corpora
#: (lantern-relay, the largest, stays for ``make eval``), and two admission families — the
#: RFC's floors and MiniLM's default — instead of nine: the grid replay is most of a run's
#: time (a twelfth of the points here).
QUICK = {"datasets": ("atlas-etl", "harbor-web", "tidewater-cli"), "backends": ("sqlite",), "embeddings": ("minilm",),
         "families": QUICK_FAMILIES}


def _csv_list(cast):
    def parse(text: str):
        try:
            return tuple(cast(x) for x in text.split(",") if x.strip())
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list: {exc}") from exc
    return parse


def _names(what: str, known: tuple[str, ...]):
    """A comma-separated list of known names, checked when the arguments are parsed
    (before any server, model or progress bar starts)."""
    def parse(text: str):
        from .running.databases import check_names
        from .errors import EvalError

        try:
            return check_names(what, [x.strip() for x in text.split(",") if x.strip()], known)
        except EvalError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def _embedding_names(text: str) -> tuple[str, ...]:
    """``--embeddings``: bundled names or model folders, every one checked when the
    arguments are parsed — a typo in the second model once failed after the whole
    first model's pass (29 s)."""
    from powercontext.bundled import BUNDLED, bundled_name
    from powercontext.suggest import did_you_mean

    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise argparse.ArgumentTypeError("give at least one embedding model (minilm, e5 or a model folder)")
    for name in names:
        if bundled_name(name) is None and not Path(name).expanduser().is_dir():
            raise argparse.ArgumentTypeError(
                f"unknown embedding {name!r}{did_you_mean(name, BUNDLED)}: use {', '.join(BUNDLED)} or the folder "
                "of a sentence-transformers model")
    return names


def parse_policy(text: str) -> AdmissionPolicy:
    """``initial``, ``none`` (no admission), ``default`` (the library's), or
    ``fts_min_terms=2,fts_min_coverage=0.25,vector_min_cosine=0.3`` (any subset; the
    rest keep the library defaults)."""
    named = {"initial": INITIAL, "none": NO_ADMISSION, "no-admission": NO_ADMISSION, "default": AdmissionPolicy()}
    if text in named:
        return named[text]
    fields = {"fts_min_terms": int, "fts_min_coverage": float, "vector_min_cosine": float, "rrf_k": int,
              "vector_min_centred": float, "cross_script_min_terms": int, "hybrid_fts_min_terms": int,
              "hybrid_fts_min_coverage": float, "gate_min": float,
              "vector_uncovered": lambda v: v if v in ("admit", "refuse") else float(v)}
    values = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in fields:
            raise argparse.ArgumentTypeError(
                f"bad policy part {part!r}: use initial, none, default or key=value with keys {', '.join(fields)}")
        try:
            values[key] = fields[key](value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"bad value for {key}: {value!r}") from exc
    try:
        return AdmissionPolicy(**values)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", action="append", default=[], metavar="PATH",
                   help="a corpus folder (datasets/<name>); repeat for several")
    p.add_argument("--all", action="store_true", help="every bundled corpus under --datasets-root")
    p.add_argument("--datasets-root", default="datasets", help="where --all looks (default: datasets)")
    p.add_argument("--backends", type=_names("backend", BACKENDS), default=None,
                   help="comma-separated: sqlite,oceanbase (default: both for --all, else sqlite)")
    p.add_argument("--modes", type=_names("mode", MODES), default=None,
                   help="comma-separated: fts,vector,hybrid (default: every mode the installed model allows)")
    p.add_argument("--seekdb-dir", default=None, help="base dir of the seekdb the harness starts (default: $POWERCONTEXT_SEEKDB_DIR, else "
                        "this checkout's own store under ~/.cache/powercontext/seekdb-stores)")
    p.add_argument("--embeddings", type=_embedding_names, default=("minilm",), metavar="MODELS",
                   help="embedding model(s) of the vector modes: minilm, e5 or a sentence-transformers folder; "
                        "several (e.g. minilm,e5) sweep once per model and compare them (sweep only; default minilm)")
    p.add_argument("--embedding-scripts", type=_csv_list(str), default=None, metavar="SCRIPTS",
                   help="the scripts a model FOLDER reads (latin,cjk,other); default: every script counts as covered")
    p.add_argument("--embedding-cache", default=None, help="embedding cache dir (default ~/.cache/powercontext/embeddings)")
    p.add_argument("--keep-databases", action="store_true", help="keep the databases after the run (OceanBase databases; SQLite files in OUT/db)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bars")
    p.add_argument("--compact", action="store_true",
                   help="svc.maintain() after each corpus is loaded, before it is searched: OceanBase searches a "
                        "fresh load ~2x slower until the server compacts it (~1-2 min a corpus)")
    p.add_argument("--style", choices=("any", "bundled"), default="any",
                   help="bundled: also refuse corpora that break the bundled corpora's conventions")
    p.add_argument("--seed", type=int, default=0, help="seed of assigned splits and folds (default 0)")
    p.add_argument("--analyzer", default=None,
                   help="the analyzer every database is created with: v1 or v2 (default: v2, a new database's)")


def _folds(text: str):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected auto or an integer, got {text!r}") from exc


def _sweep_options(s: argparse.ArgumentParser) -> None:
    _common(s)
    s.add_argument("--out", default=None, help="run folder (default results/sweep-<timestamp>)")
    s.add_argument("--reuse", action="store_true", help="reuse the candidates cache in --out if it matches (no database)")
    s.add_argument("--limit", type=int, default=8, help="limit the recommendation is made at (default 8, the service default)")
    s.add_argument("--max-false-admission", type=float, default=0.30, help="constraint bound on dev (default 0.30)")
    s.add_argument("--metric", default="ndcg@10", help="objective metric (default ndcg@10)")
    s.add_argument("--metrics", type=_names("metric", METRIC_NAMES), default=None,
                   help="comma-separated metrics the paired tests compare (default: "
                        "ndcg@10,mrr@10,recall@10,false_admission,set_f1)")
    s.add_argument("--run", action="append", default=[], metavar="NAME=PATH", dest="runs",
                   help="another system's TREC run file for the same queries (corpus entry ids as document ids), "
                        "scored beside ours as policy external:NAME; repeatable")
    s.add_argument("--terms", type=_csv_list(int), default=_DEFAULT_GRID.fts_min_terms, help="fts_min_terms grid")
    s.add_argument("--coverages", type=_csv_list(float), default=_DEFAULT_GRID.fts_min_coverage, help="fts_min_coverage grid")
    s.add_argument("--cosines", type=_csv_list(float), default=None,
                   help="vector_min_cosine grid (default: derived from the run's own cosines, per embedding model)")
    s.add_argument("--limits", type=_csv_list(int), default=_DEFAULT_GRID.limits, help="limit grid")
    s.add_argument("--families", type=_csv_list(str), default=_DEFAULT_GRID.families,
                   help="admission families to sweep, e.g. floors,centred+cross-script+coverage (default: "
                        + ",".join(_DEFAULT_GRID.families) + ")")
    s.add_argument("--centred", type=_csv_list(float), default=None,
                   help="vector_min_centred grid of the centred families (default: derived from the run's own values)")
    s.add_argument("--cross-script", type=_csv_list(int), default=_DEFAULT_GRID.cross_script_min_terms,
                   help="cross_script_min_terms grid of the +cross-script families")
    s.add_argument("--full-grid", action="store_true",
                   help="keep every grid point in sweep.parquet (default: the points the recommendation, the report "
                        "and the tuner read: the decision slice, each family's frontier, the named points' neighbours)")
    s.add_argument("--folds", type=_folds, default="auto",
                   help="k-fold cross-validation of the recommendation by query: auto (5 below 200 queries, else "
                        "the dev/test split), 0 (dev/test) or k ≥ 2")


class _Parser(argparse.ArgumentParser):
    """argparse, with each complaint on one short line: it quotes a bad value whole (a
    100 kB path, a value holding a newline)."""

    def error(self, message: str):
        # The useful line first and alone: argparse's default prints the whole usage
        # (~20 lines for sweep) before it. The usage is one --help away.
        flat = " ".join(message.split())
        flat = flat if len(flat) <= 300 else f"{flat[:200]}… ({len(flat)} characters)"
        if flat.startswith("unrecognized arguments: "):
            from powercontext.suggest import did_you_mean

            first = flat.split()[2]
            flat += did_you_mean(first, self._option_names()) if first.startswith("--") else ""
        self.exit(2, f"{self.prog}: error: {flat} (every option: --help)\n")


    def _option_names(self) -> set[str]:
        """Every option of this parser and its subcommands (a mistyped one is reported
        by the top parser, which does not know the subcommands' own)."""
        names: set[str] = set()
        for action in self._actions:
            names.update(o for o in action.option_strings if o.startswith("--"))
            for sub in (getattr(action, "choices", None) or {}).values():
                if isinstance(sub, argparse.ArgumentParser):
                    names.update(o for a in sub._actions for o in a.option_strings if o.startswith("--"))
        return names


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m powercontext.eval",
                                     description="Measure relevance-admission thresholds on labelled corpora.")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="sweep the policy grid, recommend, write the run folder")
    _sweep_options(s)
    s.add_argument("--quick", action="store_true",
                   help=f"the quick path (make eval-quick): {QUICK['embeddings'][0]} on {QUICK['backends'][0]}, the "
                        f"bundled {', '.join(QUICK['datasets'])}, the families {', '.join(QUICK['families'])}; "
                        "a few minutes instead of make eval's ~20")
    a = sub.add_parser("analyzers", help="sweep once per analyzer and put the figures side by side")
    _sweep_options(a)
    a.add_argument("--analyzers", type=_csv_list(str), default=("v1", "v2"),
                   help="comma-separated analyzers to compare (default v1,v2); run folders OUT/<analyzer>")
    r = sub.add_parser("run", help="evaluate one policy through admission.fuse")
    _common(r)
    r.add_argument("--policy", type=parse_policy, default=INITIAL,
                   help="initial | none | default | fts_min_terms=…,fts_min_coverage=…,vector_min_cosine=…")
    r.add_argument("--limit", type=int, default=8)
    r.add_argument("--out", default=None, help="write per_query and summary here (Parquet; CSV too when small)")
    v = sub.add_parser("validate", help="check corpus folders; list every problem")
    v.add_argument("datasets", nargs="+", metavar="PATH", help="corpus folders")
    v.add_argument("--style", choices=("any", "bundled"), default="any",
                   help="bundled: the bundled corpora's conventions are errors too")
    i = sub.add_parser("import", help="write a corpus in our format from a public benchmark's files")
    i.add_argument("format", choices=("locomo", "longmemeval", "beir", "trec"))
    i.add_argument("src", help="the upstream file or folder (nothing is downloaded)")
    i.add_argument("out", help="the corpus folder to write (must not exist or be empty)")
    i.add_argument("--force", action="store_true", help="overwrite a non-empty OUT")
    i.add_argument("--cross", type=int, default=5,
                   help="locomo: questions of the next conversation asked of each one as negatives (default 5)")
    i.add_argument("--granularity", choices=("turn", "session"), default="turn",
                   help="longmemeval: one entry per turn (default) or per session")
    i.add_argument("--splits", type=_csv_list(str), default=("test",),
                   help="beir: qrels files to import, e.g. dev,test (default test)")
    i.add_argument("--memory", default=None, help="beir/trec: the Memory's name (default corpus / collection)")
    i.add_argument("--qrels", default=None, help="trec: the qrels file (default: the qrels* file in SRC)")
    i.add_argument("--topics", default=None, help="trec: the topics file (default: topics* or queries* in SRC)")
    i.add_argument("--collection", default=None, help="trec: the collection (default: collection*/corpus*/docs*)")
    i.add_argument("--field", choices=("title", "description"), default="title", help="trec: the topic field")
    from .judging.cli import add_parsers as judging_parsers

    judging_parsers(sub)
    c = sub.add_parser("cleanup", help="drop the databases killed runs left on the seekdb store")
    c.add_argument("--store", "--seekdb-dir", dest="store", default=None,
                   help="the seekdb store's base dir (default: this checkout's own, as sweep uses)")
    c.add_argument("--kept", action="store_true", help="also drop the databases runs kept with --keep-databases")
    cli_judge.add_parsers(sub)
    calibrate_cli.add_parsers(sub)
    return parser


def cleanup_command(args) -> int:
    """``cleanup``: one line per database dropped (and why), or "nothing to clean"."""
    from powercontext.backends.seekdb.server import SeekdbStartError
    from powercontext.backends.seekdb.store import default_store
    from powercontext.errors import PowerContextError

    from .running.store_runs import cleanup

    import pymysql

    store = Path(args.store or default_store()).expanduser()
    try:
        done = cleanup(store, kept=args.kept)
    except (SeekdbStartError, PowerContextError, pymysql.MySQLError, OSError) as exc:
        print(f"error: cannot clean the seekdb store {store}: {exc}", file=sys.stderr)
        return 2
    print("\n".join(f"{store}: {line}" for line in done.lines()))
    return 0


def import_command(args) -> int:
    """``import``: write the corpus, print where and what, exit 2 on a wrong layout."""
    from .corpora.datasets import validate
    from .corpora.importers import FORMATS, ImporterError

    for name in ("src", "out", "qrels", "topics", "collection", "memory"):
        value = getattr(args, name, None)
        if value is None:
            continue
        try:  # a path the OS can take (undecodable bytes in argv come back as they were); a name in UTF-8
            os.fsencode(value) if name != "memory" else value.encode("utf-8")
        except UnicodeEncodeError:
            print(f"error: {name} is not valid text (it holds a lone surrogate): {value[:80]!r}", file=sys.stderr)
            return 2
    options: dict = {"force": args.force}
    if args.format == "locomo":
        options["cross"] = args.cross
    elif args.format == "longmemeval":
        options["granularity"] = args.granularity
    elif args.format == "beir":
        options["splits"] = args.splits
    else:
        options.update(qrels=args.qrels, topics=args.topics, collection=args.collection, field=args.field)
    if args.memory and args.format in ("beir", "trec"):
        options["memory"] = args.memory
    try:
        out = FORMATS[args.format](args.src, args.out, **options)
    except ImporterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    corpus = validate(out)
    print(f"{out}: {len(corpus.memories)} entries in {len(corpus.memory_names)} memories, {len(corpus.queries)} "
          f"queries ({sum(not q.is_positive for q in corpus.queries)} with an empty ideal answer), "
          f"{sum(map(len, corpus.qrels.values()))} judgements; datasheet {out / 'README.md'}")
    return 0


def validate_command(args) -> int:
    """``validate``: one line per valid corpus, every problem of the others; exit 2 if any fails."""
    from .corpora.datasets import DatasetError, validate

    status = 0
    for path in args.datasets:
        try:
            corpus = validate(path, style=args.style)
        except DatasetError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 2
            continue
        notes = f"; {len(corpus.style_notes)} bundled-style note(s)" if corpus.style_notes else ""
        splits = "with" if all(q.split for q in corpus.queries) else "without"
        print(f"{path}: valid ({len(corpus.memories)} entries in {len(corpus.memory_names)} memories, "
              f"{len(corpus.queries)} queries {splits} a split, {sum(map(len, corpus.qrels.values()))} judgements"
              f"{notes})")
    return status


def _preflight(datasets: list[Path], style: str) -> None:
    """Refuse a corpus with errors before any server starts. The bundled corpora's house
    style (id patterns, tag quotas, sizes) is a rule for the corpora shipped here only: a
    bundled corpus that breaks it gets one line, a researcher's own corpus none."""
    from .corpora.datasets import BUNDLED_ROOT, validate

    for path in datasets:
        notes = validate(path, style=style).style_notes
        if notes and Path(path).resolve().is_relative_to(BUNDLED_ROOT):
            print(f"{path}: {len(notes)} bundled-style note(s) (list them: python -m powercontext.eval "
                  f"validate {path} --style bundled)", file=sys.stderr)


def footer(results, started: float, extra: list[tuple[str, Path]] = ()) -> str:
    """Wall time, peak memory, stage times, and every run folder and report: ``results``
    is one SweepResult or {name: SweepResult} (one per model or analyzer)."""
    from .presenting.console import where_lines, wrap

    single = not isinstance(results, dict)
    results = {"": results} if single else results
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    server = max((r.collected.server_peak_mib or 0 for r in results.values()), default=0)
    lines = [f"wall time {time.perf_counter() - started:.1f} s, peak RSS {peak:.0f} MiB (this process)"
             + (f", {server:.0f} MiB (the seekdb server it started)" if server else "")]
    for name, result in results.items():
        if len(result.stages):
            by = result.stages.assign(name=lambda d: d["stage"] + d["backend"].map(lambda b: f" {b}" if b else ""))
            lines += wrap(f"stages{' of ' + name if name else ''} (s): "
                          + ", ".join(f"{n} {t:.1f}" for n, t in zip(by["name"], by["seconds"])), "  ")
    lines += where_lines(results, list(extra))
    only = next(iter(results.values()))
    if single and only.out is not None and (Path(only.out) / "report.html").is_file():
        lines.append((Path(only.out) / "report.html").resolve().as_uri())
    return "\n".join(lines)


def _embeddings(args) -> list:
    """The models of ``--embeddings``: names as given (bundled names, folders), or
    folder models built with ``--embedding-scripts`` when it is set."""
    from powercontext.bundled import bundled_name
    from powercontext.profiles import local_model

    names = list(args.embeddings or ("minilm",))
    if not args.embedding_scripts:
        return names
    return [n if bundled_name(n) is not None else local_model(n, args.embedding_scripts) for n in names]


def _quick(args) -> None:
    """``--quick``: its corpora, database and model, refused beside options that name others."""
    if not getattr(args, "quick", False):
        return
    from .errors import EvalError

    given = [flag for flag, on in (("--all", args.all), ("--dataset", args.dataset), ("--backends", args.backends),
                                   ("--embeddings", args.embeddings != ("minilm",))) if on]
    if given:
        raise EvalError(f"--quick sets the corpora, database and model itself; drop {', '.join(given)}")
    from .corpora.datasets import BUNDLED_ROOT

    args.dataset = [str(BUNDLED_ROOT / name) for name in QUICK["datasets"]]
    args.backends, args.embeddings = QUICK["backends"], QUICK["embeddings"]
    if tuple(args.families) == _DEFAULT_GRID.families:  # --families given: that choice stands
        args.families = QUICK["families"]


def _datasets(args) -> list[Path] | str:
    if args.all and args.dataset:
        raise SystemExit("error: give --all or --dataset, not both")
    if not args.all and not args.dataset:
        raise SystemExit("error: give --dataset datasets/<name> (repeatable) or --all")
    from .corpora.datasets import resolve_datasets

    return resolve_datasets(None, args.datasets_root) if args.all else resolve_datasets(args.dataset)


def external_runs(options: list[str]) -> dict[str, Path]:
    """``--run NAME=PATH`` options as name → path (a name given twice is refused)."""
    from .errors import EvalError
    from .scoring.external import parse_run_option

    runs: dict[str, Path] = {}
    for text in options:
        name, path = parse_run_option(text)
        if name in runs:
            raise EvalError(f"--run {text}: the name {name!r} is given twice")
        runs[name] = path
    return runs


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    args = build_parser().parse_args(argv)
    if args.command == "validate":
        return validate_command(args)
    if args.command == "import":
        return import_command(args)
    if args.command == "cleanup":
        return cleanup_command(args)
    if args.command in cli_judge.COMMANDS:
        return cli_judge.run(args)
    if args.command in calibrate_cli.COMMANDS:
        return calibrate_cli.run(args)
    if args.command in ("pool", "export"):
        from .judging.cli import run as judging_command

        return judging_command(args)
    from powercontext.backends.seekdb.server import SeekdbStartError
    from powercontext.errors import PowerContextError

    from . import harness
    from .errors import EvalError
    from .corpora.datasets import DatasetError

    try:
        _quick(args)
        datasets = _datasets(args)
        _preflight(datasets, args.style)
        backends = args.backends or (("sqlite", "oceanbase") if args.all else ("sqlite",))
        options = dict(seekdb_dir=args.seekdb_dir, embedding_cache=args.embedding_cache,
                       keep_databases=args.keep_databases, style=args.style, compact=args.compact)
        embeddings = _embeddings(args)
        if len(embeddings) > 1 and args.command != "sweep":
            raise EvalError(f"{args.command}: one embedding model at a time (--embeddings compares models in sweep)")
        if len(embeddings) == 1:
            options["embedding"] = embeddings[0]
        if args.command != "analyzers":
            options["analyzer"] = args.analyzer
        if args.command in ("sweep", "analyzers"):
            from .scoring.recommend import Objective
            from .presenting.console import format_summary, side_by_side_lines, wrap

            try:
                grid = Grid(tuple(args.terms), tuple(args.coverages), args.cosines, tuple(args.limits),
                            families=tuple(args.families), vector_min_centred=args.centred,
                            cross_script_min_terms=tuple(args.cross_script))
            except ValueError as exc:
                raise EvalError(str(exc)) from exc
            objective = Objective(metric=args.metric, bound=args.max_false_admission, limit=args.limit)
            if args.command == "analyzers":
                if args.analyzer is not None:
                    raise EvalError("analyzers: give the analyzers to compare with --analyzers, not --analyzer")
                table, results = harness.compare_analyzers(
                    datasets, analyzers=args.analyzers, backends=backends, modes=args.modes, out=args.out, grid=grid,
                    objective=objective, progress=not args.no_progress, reuse=args.reuse, folds=args.folds,
                    seed=args.seed, runs=external_runs(args.runs), metrics=args.metrics, full_grid=args.full_grid,
                    **options)
                print("\n".join(side_by_side_lines(table, list(args.analyzers), what="analyzer",
                                                   file="analyzers.md")))
                out = Path(next(iter(results.values())).out).parent
                print(footer(results, started, [("side by side", out / "analyzers.md")]))
                return 0
            if len(embeddings) > 1:
                tables, results = harness.compare_embeddings(
                    datasets, embeddings, out=args.out, backends=backends, modes=args.modes, grid=grid,
                    objective=objective, progress=not args.no_progress, reuse=args.reuse, folds=args.folds,
                    seed=args.seed, full_grid=args.full_grid, **options)
                names = list(results)
                for name, result in results.items():
                    print("\n" + "\n".join(wrap(f"== {name} ({result.collected.profile_id})", "   ")))
                    print(format_summary(result))
                print("\n" + "\n".join(side_by_side_lines(tables["side_by_side"], names)))
                out = Path(next(iter(results.values())).out).parent
                print(footer(results, started, [("side by side", out / "embeddings.md")]))
                return 0
            result = harness.sweep(datasets, backends=backends, modes=args.modes, out=args.out, grid=grid,
                                   objective=objective, progress=not args.no_progress, reuse=args.reuse,
                                   folds=args.folds, seed=args.seed, runs=external_runs(args.runs),
                                   metrics=args.metrics, full_grid=args.full_grid, **options)
            print(format_summary(result))
            print(footer(result, started))
        else:
            per_query, summary = harness.run(datasets, policy=args.policy, backends=backends, modes=args.modes,
                                             limit=args.limit, progress=not args.no_progress, split_seed=args.seed,
                                             **options)
            cols = ["backend", "mode", "label", "split", "queries", "ndcg@10", "mrr@10", "recall@10", "set_f1",
                    "false_admission", "false_admission_ci", "empty_answer", "hits"]
            print(summary[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            if args.out:
                from .runfolder import write_table

                write_table(per_query.drop(columns=["text"]), args.out, "per_query", float32=METRIC_NAMES)
                write_table(summary, args.out, "summary", float32=METRIC_NAMES)
    except (DatasetError, EvalError, SeekdbStartError, PowerContextError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
