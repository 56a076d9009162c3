"""What the magics print for ``--help`` and how a parser's complaint becomes one line
with a "did you mean …" when the user mistyped an option or a choice.

Every subcommand and every ``%pcmem runtime`` action has its own argparse parser
(IPython's ``MagicArgumentParser``), so ``--help`` lists exactly that command's options.
"""

from __future__ import annotations

import argparse
import re
import textwrap

from powercontext.suggest import did_you_mean

__all__ = ["help_text", "usage_line", "with_hint"]


def help_text(parser: argparse.ArgumentParser) -> str:
    """The parser's help as plain text: IPython's formatter writes RST (``::`` and an
    indented usage block), which a notebook prints verbatim."""
    text = parser.format_help().strip()
    text = text.removeprefix("::").strip("\n")
    head, _, rest = text.partition("\n\n")
    return "usage: " + " ".join(textwrap.dedent(head).split()) + ("\n\n" + rest if rest else "")


def usage_line(parser: argparse.ArgumentParser) -> str:
    """``%pcmem NAME [options] ARGS`` on one line."""
    return " ".join(parser.format_usage().replace("::", " ").replace("usage:", " ").split())


_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.+)$")
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


def with_hint(parser: argparse.ArgumentParser, message: str) -> str:
    """``message`` plus "did you mean …" for a mistyped option (``--limt``) or choice, on
    one short line: argparse quotes a bad value whole, newlines and 100 kB included."""
    message = " ".join(message.split())
    if len(message) > 300:
        message = f"{message[:200]}… ({len(message)} characters)"
    unrecognized = _UNRECOGNIZED.search(message)
    if unrecognized:
        options = [s for s in parser._option_string_actions if s.startswith("--")]
        for word in unrecognized.group(1).split():
            if word.startswith("-"):
                hint = did_you_mean(word.split("=", 1)[0], options)
                if hint:
                    return message + hint
        return message
    invalid = _INVALID_CHOICE.search(message)
    if invalid:
        choices = [c for a in parser._actions if a.choices for c in a.choices]
        return message + did_you_mean(invalid.group(1), choices)
    return message
