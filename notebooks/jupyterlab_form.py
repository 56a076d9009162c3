"""Put executed tutorial notebooks in the form JupyterLab saves them in, so that a user
who runs one in JupyterLab and saves it sees no diff in ``git status`` (issue 45).

``make notebooks`` executes them with nbconvert, which stores what differs from a
JupyterLab save in two ways:

* a cell that prints, computes, then prints again gets one stdout output per burst;
  JupyterLab's output area merges consecutive outputs of the same stream into one
  (nbval compares them merged either way, so only the file changes);
* the kernelspec's ``display_name`` is whatever the notebook was created with ("Python
  3"); JupyterLab writes the running kernel's ("Python 3 (ipykernel)").

``python notebooks/jupyterlab_form.py NOTEBOOK…`` rewrites the files in place;
``as_saved(nb)`` returns the normalised notebook (the test compares it with the file).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import nbformat


def kernel_display_name(name: str) -> str:
    """The display name of the installed kernel ``name``, as JupyterLab writes it."""
    from jupyter_client.kernelspec import KernelSpecManager

    return KernelSpecManager().get_kernel_spec(name).display_name


def merged_streams(outputs: list) -> list:
    merged: list = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")):
            last["text"] = last["text"] + output["text"]
        else:
            merged.append(copy.deepcopy(output))
    return merged


def as_saved(nb):
    """A copy of ``nb`` as JupyterLab would save it after running it top to bottom."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.from_dict(o) for o in merged_streams(cell.outputs)]
    spec = nb.metadata.get("kernelspec")
    if spec and spec.get("name"):
        spec["display_name"] = kernel_display_name(spec["name"])
    return nb


def main(paths: list[str]) -> int:
    for path in map(Path, paths):
        nb = nbformat.read(path, as_version=4)
        saved = as_saved(nb)
        if saved != nb:
            nbformat.write(saved, path)
            print(f"{path}: put in JupyterLab's saved form")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
