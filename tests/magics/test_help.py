"""Help where users look: every ``%pcmem`` subcommand and every runtime action has its
own ``--help`` listing its options; a mistyped name or option gets "did you mean …"."""

from __future__ import annotations

import pytest

from powercontext.magics import runtime
from powercontext.magics.magic import PcMem

from .helpers import fail, run

SUBCOMMANDS = sorted(f.subcommand for f in vars(PcMem).values() if getattr(f, "subcommand", None))


def _options(parser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")}


def _help(shell, capsys, line: str) -> str:
    capsys.readouterr()
    assert run(shell, line) is None
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err == ""
    return out


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_help_lists_its_own_options(shell, capsys, name):
    parser = getattr(PcMem, "_" + name).parser
    for flag in ("--help", "-h"):
        out = _help(shell, capsys, f"%pcmem {name} {flag}")
        assert out.startswith(f"usage: %pcmem {name}") and "::" not in out.splitlines()[0]
        missing = {o for o in _options(parser) if o not in out}
        assert not missing, (name, missing)


@pytest.mark.parametrize("action", runtime.ACTIONS)
def test_every_runtime_action_help_lists_its_own_options(shell, capsys, action):
    out = _help(shell, capsys, f"%pcmem runtime {action} --help")
    assert out.startswith(f"usage: %pcmem runtime {action}")
    options = _options(runtime.PARSERS[action])
    assert all(o in out for o in options), (action, options)
    if action == "open":  # what the issue found hidden behind the generic help
        assert all(o in out for o in ("--embedding", "--sidecar", "--schedule", "--seekdb"))


def test_runtime_help_lists_every_action_with_its_usage(shell, capsys):
    for line in ("%pcmem runtime --help", "%pcmem runtime", "%pcmem help runtime"):
        out = _help(shell, capsys, line)
        assert out.startswith("usage: %pcmem runtime")
        for action in runtime.ACTIONS:
            assert f"%pcmem runtime {action}" in out, (line, action)


def test_help_lists_every_subcommand(shell, capsys):
    out = _help(shell, capsys, "%pcmem help")
    assert all(f"%pcmem {name}" in out for name in SUBCOMMANDS)


@pytest.mark.parametrize("line, expected", [
    ("%pcmem serch foo", "did you mean 'search'?"),
    ("%pcmem help serch", "did you mean 'search'?"),
    ("%pcmem runtime flsh", "did you mean 'flush'?"),
    ("%pcmem runtime entires", "did you mean 'entries'?"),
    ('%pcmem search "q" --limt 3', "did you mean '--limit'?"),
    ('%pcmem search "q" --mode hybird', "did you mean 'hybrid'?"),
    ("%pcmem inspect manifst", "did you mean 'manifest'?"),
    ("%pcmem runtime open x.db --pipline default", "did you mean '--pipeline'?"),
    ("%pcmem runtime search q --mode vectr", "did you mean 'vector'?"),
])
def test_a_mistyped_name_gets_did_you_mean_on_one_line(shell, capsys, line, expected):
    assert expected in fail(shell, capsys, line)


def test_a_name_nothing_is_close_to_lists_the_choices(shell, capsys):
    line = fail(shell, capsys, "%pcmem zzzz")
    assert "did you mean" not in line and "one of: changes, close" in line
