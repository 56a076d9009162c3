"""``python -m powercontext.eval calibrate``: fit a calibration artefact on labelled
corpora for one embedding profile and write it with its held-out report.

    python -m powercontext.eval calibrate --dataset my-corpus --embedding e5 --out results/cal
    python -m powercontext.eval calibrate --all --embedding minilm --folds corpus --out results/cal
    python -m powercontext.eval probability-study --all --embeddings minilm,e5 --out results/probability

The folder gets ``calibration.json`` (use it: ``svc.calibration =
Calibration.load(path)``), ``cells.csv`` and ``calibration.md`` (n, ECE, Brier per cell;
⚠ under ``--min-cell-n``) and ``reliability.png`` (predicted vs observed per language
pair / query length). ``probability-study`` runs the leave-one-corpus-out study that
decides whether ``min_probability`` becomes each profile's default
(``<out>/<profile>/probability_study.md``: adopted or not, and by how much it misses).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

COMMANDS = ("calibrate", "probability-study")


def _folds(text: str) -> int | str:
    if text in ("auto", "corpus"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--folds is auto, corpus or a number of folds, got {text!r}") from None


def add_parsers(sub) -> None:
    p = sub.add_parser("calibrate", help="fit admission in probability units for one embedding profile")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--dataset", action="append", dest="datasets", metavar="PATH", help="a corpus folder (repeat)")
    where.add_argument("--all", action="store_true", help="the bundled corpora")
    p.add_argument("--embedding", required=True, help="minilm, e5, a profile id or a model folder")
    p.add_argument("--out", required=True, help="the folder to write the artefact and its report to")
    p.add_argument("--folds", type=_folds, default="auto",
                   help="auto (leave one corpus out with ≥ 2 corpora, else 5), corpus, or k folds by query")
    p.add_argument("--min-cell-n", type=int, default=30, help="labelled candidates a cell needs (else pooled)")
    p.add_argument("--vector-signal", choices=("auto", "cosine", "centred"), default="auto")
    s = sub.add_parser("probability-study", help="held out: does min_probability beat each profile's default?")
    where = s.add_mutually_exclusive_group(required=True)
    where.add_argument("--dataset", action="append", dest="datasets", metavar="PATH", help="a corpus folder (repeat)")
    where.add_argument("--all", action="store_true", help="the bundled corpora")
    s.add_argument("--embeddings", default="minilm,e5", help="comma-separated profiles (default minilm,e5)")
    s.add_argument("--out", required=True, help="the folder to write each profile's study to")
    s.add_argument("--limit", type=int, default=8)
    s.add_argument("--bound", type=float, default=0.30, help="the false-admission bound of the tuning corpora")


def run(args: argparse.Namespace) -> int:
    from powercontext.errors import PowerContextError

    from .presenting.calibration_report import write
    from .errors import EvalError
    from .corpora.datasets import DatasetError
    from .harness import calibrate

    if args.command == "probability-study":
        return _study(args)
    try:
        report = calibrate("all" if args.all else args.datasets, args.embedding, folds=args.folds,
                           min_cell_n=args.min_cell_n, vector_signal=args.vector_signal)
        out = write(report, args.out, title=report.calibration.profile)
    except (DatasetError, EvalError, PowerContextError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for channel, value in sorted(report.ece.items()):
        print(f"{channel}: held-out ECE {value:.3f} ({report.folds})")
    print(f"calibration: {(out / 'calibration.json').resolve()}")
    print(f"report: {(out / 'calibration.md').resolve()}")
    return 0


def _study(args: argparse.Namespace) -> int:
    from powercontext.errors import PowerContextError

    from .corpora.datasets import DatasetError
    from .errors import EvalError
    from .harness import probability_study

    try:
        results = probability_study("all" if args.all else args.datasets,
                                    [e for e in args.embeddings.split(",") if e], out=args.out,
                                    limit=args.limit, bound=args.bound)
    except (DatasetError, EvalError, PowerContextError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for profile, result in results.items():
        print(f"{profile}: {result.verdict}")
    print(f"report: {Path(args.out).resolve()}/<profile>/probability_study.md")
    return 0
