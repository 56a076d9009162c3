"""``python -m powercontext.eval judge FOLDER [--import QRELS] [--judge NAME]`` and
``python -m powercontext.eval agreement FOLDER``.

``judge`` without ``--import`` says where a judge stands (judged / total, what is left);
judging itself happens in the notebook widget (``%pcmem judge FOLDER``).
"""

from __future__ import annotations

import argparse
import sys

COMMANDS = ("judge", "agreement")


def _judge_name(text: str) -> str:
    from .judgments import JudgingError, check_judge

    try:
        return check_judge(text)
    except JudgingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parsers(sub) -> None:
    j = sub.add_parser("judge", help="import TREC qrels as a judge's judgments of a pool folder, or show progress")
    j.add_argument("folder", metavar="FOLDER", help="the pool folder")
    j.add_argument("--import", dest="qrels", metavar="QRELS", default=None,
                   help="TREC qrels in the folder's ids ('QUERY 0 ENTRY GRADE', grades 0-2)")
    j.add_argument("--judge", type=_judge_name, default="default", help="the judge's name (default: default)")
    a = sub.add_parser("agreement", help="Cohen's kappa and unanswerable agreement between a folder's judges")
    a.add_argument("folder", metavar="FOLDER", help="the pool folder")


def run(args) -> int:
    from .judgments import JudgingError, read_judgments, read_pool

    try:
        pool = read_pool(args.folder)
        if args.command == "agreement":
            from .agreement import folder_agreement

            for result in folder_agreement(pool):
                print("\n".join(result.lines()))
            return 0
        if args.qrels is not None:
            from .qrels_import import import_qrels

            print(import_qrels(pool, args.qrels, args.judge).line())
        log = read_judgments(pool, args.judge)
    except JudgingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if log.truncated:
        print(f"warning: {log.truncated}", file=sys.stderr)
    left = log.left
    print(f"judge {args.judge}: {len(pool.questions) - len(left)} / {len(pool.questions)} questions judged"
          + (f"; left: {', '.join(left[:10])}{' …' if len(left) > 10 else ''}" if left else ""))
    return 0
