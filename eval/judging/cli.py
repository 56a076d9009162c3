"""The ``pool`` and ``export`` subcommands of ``python -m powercontext.eval`` (their
parsers and commands live here so ``__main__`` stays a dispatcher)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

__all__ = ["add_parsers", "run"]

COMMANDS = ("pool", "export")


def _since(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--since takes an ISO time such as 2026-12-01T00:00+00:00, got {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError("--since needs a time zone, e.g. 2026-12-01T00:00+00:00")
    return moment


def add_parsers(sub) -> None:
    p = sub.add_parser("pool", help="pool a database's Memories and questions for judging into a folder")
    p.add_argument("database", metavar="DB_OR_URL", help="a SQLite file or an oceanbase:// URL")
    p.add_argument("--out", required=True, help="the pool folder (rerun on it to resume an interrupted pool)")
    p.add_argument("--memory", action="append", default=None, metavar="REF",
                   help="a Memory to snapshot (repeatable; default every Memory)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-log", action="store_true", help="the questions of the search log")
    src.add_argument("--questions", metavar="FILE", help="one question per line, UTF-8")
    p.add_argument("--since", type=_since, default=None, help="with --from-log: searches logged at or after")
    p.add_argument("--depth", type=int, default=20, help="top candidates pooled per search (default 20)")
    p.add_argument("--embeddings", default="minilm",
                   help="the database's embedding profile, then any other to pool under too, e.g. minilm,e5 "
                        "(the snapshot embedded with it in a scratch copy); 'none' for full-text only")
    e = sub.add_parser("export", help="write a judged pool folder as a corpus (qrels, datasheet)")
    e.add_argument("folder", help="the pool folder")
    e.add_argument("--out", required=True, metavar="CORPUS", help="the corpus folder to write (must not exist)")
    e.add_argument("--judge", default=None, help="whose judgments to use (default: the judge with the most)")


def run(args) -> int:
    from powercontext.errors import PowerContextError

    from . import export, pool

    try:
        if args.command == "pool":
            if args.since is not None and not args.from_log:
                _refuse("--since goes with --from-log")
            names = () if args.embeddings.strip().lower() == "none" else tuple(
                x.strip() for x in args.embeddings.split(",") if x.strip())
            out = pool(args.database, args.out, memories=args.memory, from_log=args.from_log, since=args.since,
                       questions=args.questions, depth=args.depth, embeddings=names)
            from .folder import PoolFolder

            folder = PoolFolder(out)
            lines = folder.pool_lines()
            print(f"pooled {len(folder.queries())} questions, {len(lines)} question-entry pairs: {out}")
        else:
            out = export(args.folder, args.out, judge=args.judge)
            print(f"exported {out} (python -m powercontext.eval validate {out})")
    except PowerContextError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _refuse(message: str):
    from .folder import JudgingError

    raise JudgingError(message)
