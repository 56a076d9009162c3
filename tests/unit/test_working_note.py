"""The working-note fallback (pure): only what the provider supplied, never more."""

from powercontext.memory.candidates import WorkingNoteFallback
from powercontext.model import Source


def source(kind, content, **meta):
    return Source(name=f"src_{kind}", content=content, description=None, metadata={"type": kind, **meta},
                  content_hash="0" * 64)


def test_malformed_verification_is_left_out_not_guessed():
    note = WorkingNoteFallback().note([source("task_outcome", "Done.", verification=[1, "x"])])
    assert note.text == "Task outcome: Done."


def test_a_git_change_alone_is_not_a_note_but_adds_its_head_and_paths_to_a_report():
    change = source("git_change", "diff", head="f" * 40, paths=["b.py", "a.py"])
    assert WorkingNoteFallback().note([change]) is None
    note = WorkingNoteFallback().note([source("agent_turn", "Paused mid-refactor."), change])
    assert note.text == f"Agent turn report: Paused mid-refactor. Changed at {'f' * 12}: a.py, b.py."
    assert [s.name for s in note.sources] == ["src_agent_turn", "src_git_change"]
