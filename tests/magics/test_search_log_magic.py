"""`%pcmem open --search-log` and `%config PcMem.search_log` (issue 44, item 1): the
opened service logs the searches the magics run; without either, nothing is logged."""

from __future__ import annotations

from powercontext.magics import current_magics, current_runner, current_service

from .helpers import run

PORT = "The dev server listens on port 5173."
QUESTION = "which port does the dev server listen on"


def _search_and_read_log(shell) -> list:
    run(shell, f'%pcmem remember --kind fact "{PORT}"')
    hits = run(shell, f'%pcmem search "{QUESTION}"')
    assert len(hits) == 1
    return current_runner(shell).run(current_service(shell).search_log())


def test_open_with_the_flag_logs_the_magics_searches(shell, target):
    run(shell, f"%pcmem open {target} --search-log")
    (record,) = _search_and_read_log(shell)
    assert record.question == QUESTION and len(record.hits) == 1
    # the line that reopens the same database keeps the log on
    assert current_magics(shell).session.open_line.endswith(" --search-log")


def test_config_turns_the_log_on_for_every_open(shell, sqlite_target):
    run(shell, "%config PcMem.search_log = True")
    run(shell, f"%pcmem open {sqlite_target}")
    (record,) = _search_and_read_log(shell)
    assert record.question == QUESTION


def test_without_flag_or_config_nothing_is_logged(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    assert _search_and_read_log(shell) == []
    assert "--search-log" not in current_magics(shell).session.open_line
