"""The README's Runtime section runs as pasted."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def runtime_block() -> str:
    section = README.read_text().split("## The local Runtime", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def test_the_readme_runtime_snippet_runs_as_pasted(tmp_path):
    done = subprocess.run([sys.executable, "-c", runtime_block()], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first, second, third = done.stdout.splitlines()
    assert (first, second) == ("1 True", "committed (0, 1]")
    memory = re.fullmatch(r"(mem_art_\w+)@2 .*", third).group(1)
    assert third == (f"{memory}@2 ['Use SQLite for the local Runtime profile.', "
                     "'site/ is generated output: never edit it.']")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["powercontext.db", "powercontext.db.scheduler.sqlite"]
