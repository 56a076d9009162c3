"""``%pcmem runtime search`` takes the admission policy options of ``%pcmem search``
(generated from the same field descriptions), applies them to the Runtime's search, and
refuses a bad value or an option that cannot decide the search with the very message
``%pcmem search`` gives — on both storage profiles, with the real MiniLM model."""

from __future__ import annotations

import dataclasses

from powercontext.magics import current_magics, current_runner, policy_options, runtime
from powercontext.memory import policy_fields

from ..magics.helpers import fail, run

ENTRIES = ("preference:Run make test before every push.",
           "constraint:site/ is generated output: never edit it.",
           "fact:Nightly backups of the production database run at 02:00 UTC.")
QUERY = "what does the nightly job do with the production database and its backups at night"


def _options(parser) -> set[str]:
    return {o for action in parser._actions for o in action.option_strings}


def test_runtime_search_has_every_policy_option_of_search():
    wanted = {f.option for f in policy_fields.TUNABLE}
    assert wanted <= _options(runtime.PARSERS["search"])


def test_runtime_search_applies_the_policy_options(shell, capsys, fresh_target, scope):
    run(shell, f"%pcmem runtime open {fresh_target} --pipeline default --scope {scope} --embedding minilm")
    run(shell, '%pcmem runtime capture t1 "notes" ' + " ".join(f'--entry "{e}"' for e in ENTRIES))
    run(shell, "%pcmem runtime flush")
    magics = current_magics(shell)
    opened = runtime.session_of(magics).runtime
    svc, memory, runner = opened.memory_service, opened.memory.for_scope(scope), current_runner(shell)

    # fts: the default floors admit the backups entry; a stricter floor given as an option refuses it
    default = run(shell, f'%pcmem runtime search "{QUERY}" --mode fts')
    strict = run(shell, f'%pcmem runtime search "{QUERY}" --mode fts --fts-min-terms 9')
    assert "Nightly backups" in " ".join(default.text) and strict.empty
    assert "nothing admitted" in capsys.readouterr().out
    policy = dataclasses.replace(svc.policy, fts_min_terms=9)
    assert not runner.run(memory.search(QUERY, mode="fts", policy=policy)).hits
    explained = run(shell, f'%pcmem runtime search "{QUERY}" --mode fts --fts-min-terms 9 --explain')
    assert len(explained) and not explained.admitted.any()
    assert all("fts_min_terms=9" in r for r in explained.reason)

    # hybrid: the hybrid floors (no option reached them before) decide the fts candidates
    explained = run(shell, f'%pcmem runtime search "{QUERY}" --mode hybrid --explain '
                           "--hybrid-fts-min-terms 1 --hybrid-fts-min-coverage 0")
    fts = explained[explained.channel == "fts"]
    assert len(fts) and fts.admitted.all()
    assert all("hybrid_fts_min_terms=1" in r for r in fts.reason)


def test_runtime_search_refuses_bad_options_like_search(shell, capsys, tmp_path):
    run(shell, f"%pcmem runtime open {tmp_path / 'rt.db'} --pipeline default --scope project:demo")
    run(shell, f"%pcmem open {tmp_path / 'memory.db'}")
    bad = ["--fts-min-terms x", "--fts-min-terms 0", "--min-probability 2", "--gate-signal nope",
           "--vector-uncovered maybe", "--hybrid-fts-min-terms 2"]
    for option in bad:
        line = fail(shell, capsys, f'%pcmem runtime search "make test" --mode fts {option}')
        assert line == fail(shell, capsys, f'%pcmem search "make test" --mode fts {option}'), option
        assert line.split(": ", 1)[1].startswith(("--", "bad admission threshold")), line
    # an option refused for the mode names why, in one line, the field that decides instead
    assert "applies in hybrid mode only; fts mode's is fts_min_terms" in line
    assert policy_options.GROUP.split(" (")[0] in capsys.readouterr().out + _help(shell, capsys)


def _help(shell, capsys) -> str:
    shell.run_line_magic("pcmem", "runtime search --help")
    return capsys.readouterr().out
