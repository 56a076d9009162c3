"""``python -m powercontext.eval``: the threshold-evaluation harness CLI.

    python -m powercontext.eval sweep --all --backends sqlite,oceanbase
    python -m powercontext.eval sweep --dataset datasets/atlas-etl --modes fts --out results/atlas
    python -m powercontext.eval run --dataset datasets/atlas-etl --policy fts_min_coverage=0.4 --limit 8

``sweep`` loads every corpus into a fresh database per backend (starting a local
seekdb for OceanBase unless POWERCONTEXT_OCEANBASE_URL names a server), retrieves each
query once per mode, replays the policy grid offline, recommends a policy per mode,
writes the run folder and prints the summary table. ``run`` evaluates one policy
through ``admission.fuse`` itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

from .sweep import INITIAL, Grid

_DEFAULT_GRID = Grid()


def _csv_list(cast):
    def parse(text: str):
        try:
            return tuple(cast(x) for x in text.split(",") if x.strip())
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list: {exc}") from exc
    return parse


def parse_policy(text: str) -> AdmissionPolicy:
    """``initial``, ``none`` (no admission), ``default`` (the library's), or
    ``fts_min_terms=2,fts_min_coverage=0.25,vector_min_cosine=0.3`` (any subset; the
    rest keep the library defaults)."""
    named = {"initial": INITIAL, "none": NO_ADMISSION, "no-admission": NO_ADMISSION, "default": AdmissionPolicy()}
    if text in named:
        return named[text]
    fields = {"fts_min_terms": int, "fts_min_coverage": float, "vector_min_cosine": float, "rrf_k": int}
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
    p.add_argument("--backends", type=_csv_list(str), default=None,
                   help="comma-separated: sqlite,oceanbase (default: both for --all, else sqlite)")
    p.add_argument("--modes", type=_csv_list(str), default=None,
                   help="comma-separated: fts,vector,hybrid (default: every mode the installed model allows)")
    p.add_argument("--seekdb-dir", default=None, help="base dir of the seekdb the harness starts (default ~/.cache/powercontext/seekdb)")
    p.add_argument("--embedding-cache", default=None, help="embedding cache dir (default ~/.cache/powercontext/embeddings)")
    p.add_argument("--keep-databases", action="store_true", help="keep the OceanBase databases after the run")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m powercontext.eval",
                                     description="Measure relevance-admission thresholds on labelled corpora.")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="sweep the policy grid, recommend, write the run folder")
    _common(s)
    s.add_argument("--out", default=None, help="run folder (default results/sweep-<timestamp>)")
    s.add_argument("--reuse", action="store_true", help="reuse candidates.pkl in --out if it matches (no database)")
    s.add_argument("--limit", type=int, default=8, help="limit the recommendation is made at (default 8, the service default)")
    s.add_argument("--max-false-admission", type=float, default=0.20, help="constraint bound on dev (default 0.20)")
    s.add_argument("--metric", default="ndcg@10", help="objective metric (default ndcg@10)")
    s.add_argument("--terms", type=_csv_list(int), default=_DEFAULT_GRID.fts_min_terms, help="fts_min_terms grid")
    s.add_argument("--coverages", type=_csv_list(float), default=_DEFAULT_GRID.fts_min_coverage, help="fts_min_coverage grid")
    s.add_argument("--cosines", type=_csv_list(float), default=_DEFAULT_GRID.vector_min_cosine, help="vector_min_cosine grid")
    s.add_argument("--limits", type=_csv_list(int), default=_DEFAULT_GRID.limits, help="limit grid")
    r = sub.add_parser("run", help="evaluate one policy through admission.fuse")
    _common(r)
    r.add_argument("--policy", type=parse_policy, default=INITIAL,
                   help="initial | none | default | fts_min_terms=…,fts_min_coverage=…,vector_min_cosine=…")
    r.add_argument("--limit", type=int, default=8)
    r.add_argument("--out", default=None, help="write per_query.csv and summary.csv here")
    return parser


def _datasets(args) -> list[Path] | str:
    if args.all and args.dataset:
        raise SystemExit("error: give --all or --dataset, not both")
    if not args.all and not args.dataset:
        raise SystemExit("error: give --dataset datasets/<name> (repeatable) or --all")
    from .harness import resolve_datasets

    return resolve_datasets(None, args.datasets_root) if args.all else resolve_datasets(args.dataset)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from powercontext.backends.seekdb import SeekdbStartError
    from powercontext.errors import PowerContextError

    from . import harness
    from .databases import EvalError
    from .datasets import DatasetError

    try:
        datasets = _datasets(args)
        backends = args.backends or (("sqlite", "oceanbase") if args.all else ("sqlite",))
        options = dict(seekdb_dir=args.seekdb_dir, embedding_cache=args.embedding_cache,
                       keep_databases=args.keep_databases)
        if args.command == "sweep":
            from .recommend import Objective
            from .report import format_summary

            grid = Grid(tuple(args.terms), tuple(args.coverages), tuple(args.cosines), tuple(args.limits))
            objective = Objective(metric=args.metric, bound=args.max_false_admission, limit=args.limit)
            result = harness.sweep(datasets, backends=backends, modes=args.modes, out=args.out, grid=grid,
                                   objective=objective, progress=not args.no_progress, reuse=args.reuse, **options)
            print(format_summary(result))
        else:
            per_query, summary = harness.run(datasets, policy=args.policy, backends=backends, modes=args.modes,
                                             limit=args.limit, progress=not args.no_progress, **options)
            cols = ["backend", "mode", "label", "split", "queries", "ndcg@10", "mrr@10", "recall@10", "set_f1",
                    "false_admission", "false_admission_ci", "empty_answer", "hits"]
            print(summary[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            if args.out:
                from .report import _csv

                out = Path(args.out)
                out.mkdir(parents=True, exist_ok=True)
                _csv(per_query.drop(columns=["text"]), out / "per_query.csv")
                _csv(summary, out / "summary.csv")
    except (DatasetError, EvalError, SeekdbStartError, PowerContextError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
