"""The harness's refusals are the library's typed errors: one ``except PowerContextError``
serves a notebook that runs both, and a URL quoted in one never shows its password."""

import pytest

from eval import harness
from eval.errors import EvalError
from powercontext.errors import PowerContextError


def test_a_missing_corpus_is_a_power_context_error(tmp_path):
    with pytest.raises(PowerContextError) as caught:
        harness.sweep([tmp_path / "no-such-corpus"], progress=False)
    assert isinstance(caught.value, EvalError) and isinstance(caught.value, RuntimeError)
    assert "no-such-corpus" in str(caught.value)


def test_a_url_in_the_message_is_redacted_and_long_lists_stay_whole():
    problems = "\n".join(f"line {i}: a problem" for i in range(400))
    error = EvalError(f"cannot reach oceanbase://root:s3cret@127.0.0.1:2881/pc\n{problems}")
    assert "s3cret" not in str(error)
    assert str(error).endswith("line 399: a problem")
