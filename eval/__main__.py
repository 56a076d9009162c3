"""``python -m powercontext.eval``: the threshold-evaluation harness CLI."""

import sys


def main(argv: list[str] | None = None) -> int:
    print("powercontext.eval: the sweep harness arrives with the evaluation issue; "
          "the bundled corpora can already be checked with `python -m powercontext.eval.datasheet datasets/<corpus> --check`.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
