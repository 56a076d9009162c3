"""ipywidgets for the workbench (powercontext.magics.widgets).

Each widget takes a MemoryService and, optionally, the private-loop runner
(``powercontext.loop.default_runner()`` by default); inside a notebook use the
service the magics opened: ``ManifestInspector(current_service(), "mem_art_…")`` or
``%pcmem inspect manifest REF``.
"""

from .admission import AdmissionInspector
from .journal import JournalInspector
from .judge import JudgeWidget
from .lineage import LineageExplorer
from .manifest import ManifestInspector
from .tuner import ThresholdTuner

__all__ = ["AdmissionInspector", "JournalInspector", "JudgeWidget", "LineageExplorer", "ManifestInspector", "ThresholdTuner"]
