"""The run folder's tables on disk: Parquet (zstd), read back by ``load`` or pandas.

A leaf beside the stages (like ``private``): running writes its candidate cache with it,
scoring reads a run folder back through it, presenting writes the report's tables — so it
knows no stage, and the caller names its metric columns (``float32``).

A sweep of the three bundled corpora on both databases was 136 MB as CSV and a pickle
(``sweep.csv`` alone 106 MB), too big to keep beside the report. Every table is now
written as ``<name>.parquet`` — columnar, compressed, typed — and the small ones (at
most ``CSV_ROWS`` rows: summary, recommendations, leave-one-out …) also as
``<name>.csv`` for a spreadsheet or ``grep``. ``pd.read_parquet(run / "sweep.parquet")``
reads one table; ``load(run)`` (``harness.load``) reads them all.

What is stored, and how it reads back:

* the metric columns the caller names (``float32=metrics.METRIC_NAMES``) as float32 —
  7 significant digits, more than the 6 the CSV kept; thresholds, limits and counts keep their exact types;
* the sweep table sorted by backend, mode, corpus, split, family, limit and
  thresholds, so neighbouring grid points sit together (they compress best that way),
  its metrics byte-stream-split (the caller names them: ``split``);
* tuple columns (a ranking, a query's tags) as lists, turned back into tuples;
* a column mixing words and numbers (``vector_uncovered``: ``admit``, ``refuse`` or a
  threshold) as text, turned back into numbers where it held numbers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from powercontext.errors import PowerContextError, shown

from .errors import EvalError
from .private import private_dir, private_file

__all__ = ["CSV_ROWS", "RunFolderError", "RunTables", "load", "read_table", "write_table"]

#: Tables up to this many rows are also written as CSV.
CSV_ROWS = 2_000
COMPRESSION = "zstd"
#: zstd's level for a table with byte-stream-split columns (the sweep table: 0.25 s to
#: write at 9, ~5 % smaller than the default 3; above 9 it costs seconds for little).
SPLIT_LEVEL = 9
#: The order the sweep table is written in (keys present in the frame are used).
SWEEP_ORDER = ("backend", "mode", "corpus", "split", "family", "limit", "fts_min_terms", "hybrid_fts_min_terms",
               "cross_script_min_terms", "fts_min_coverage", "hybrid_fts_min_coverage", "vector_min_centred",
               "vector_min_cosine", "gate_min")
_MIXED = "powercontext.mixed"  # the Parquet key-value metadata naming the word-or-number columns


def _is_sequence(v: Any) -> bool:
    return isinstance(v, (tuple, list))


def _storable(frame: pd.DataFrame, float32: tuple[str, ...]) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with its ``float32`` columns narrowed and its word-or-number columns as text."""
    out = frame.copy()
    mixed = []
    for column in out.columns:
        values = out[column]
        if column in float32 and values.dtype.kind == "f":
            out[column] = values.astype(np.float32)
        elif values.dtype == object:
            kinds = {type(v) for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))}
            if str in kinds and kinds & {float, int, np.float64, np.int64}:
                out[column] = [None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in values]
                mixed.append(column)
    return out, mixed


def write_table(frame: pd.DataFrame, folder: str | Path, name: str, *, sort: tuple[str, ...] = (),
                csv: bool = True, float32: Collection[str] = (), split: Collection[str] = (),
                csv_frame: pd.DataFrame | None = None) -> Path:
    """Write ``frame`` as ``folder/name.parquet`` (and, with ``csv``, ``name.csv`` when
    it is small); ``sort`` orders the rows by those of its columns the frame has.

    ``float32``: float columns (or lists of floats: the exact top lists' cosines) stored
    as float32 — the metrics, and only values that are never replayed (a replayed
    signal must stay float64 to equal the online search).
    ``split``: float columns (or lists of floats) of many distinct values, stored
    byte-stream-split instead of dictionary-encoded — lossless, and zstd then finds the
    shared exponent bytes (the sweep's metrics: 4.35 → 3.5 MB for ``sweep --all``).
    ``csv_frame``: the CSV copy's rows when the Parquet holds a slimmer form of them
    (explain by reference: the CSV is read by people, who want the signals in it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = private_dir(folder)
    keys = [k for k in sort if k in frame.columns]
    if keys:
        frame = frame.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)
        if csv_frame is not None:
            csv_frame = csv_frame.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)
    stored, mixed = _storable(frame, tuple(float32))
    table = pa.Table.from_pandas(stored, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _MIXED.encode(): json.dumps(mixed).encode()})
    for column in (c for c in float32 if c in table.column_names):  # lists of floats: _storable leaves them
        kind = table.schema.field(column).type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
            continue
        table = table.set_column(table.column_names.index(column), column, table[column].cast(pa.list_(pa.float32())))
    split = [c for c in split if c in table.column_names]
    paths = [f"{c}.list.element" if pa.types.is_list(table.schema.field(c).type) else c for c in split]
    path = folder / f"{name}.parquet"
    with private_file(path) as fh:
        pq.write_table(table, fh, compression=COMPRESSION, compression_level=SPLIT_LEVEL if split else None,
                       use_dictionary=[c for c in table.column_names if c not in split] if split else True,
                       use_byte_stream_split=paths or False)
    if csv and len(frame) <= CSV_ROWS:
        write_csv(frame if csv_frame is None else csv_frame, folder / f"{name}.csv")
    return path


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    joined = {c: frame[c].map(lambda v: " ".join(map(str, v)) if _is_sequence(v) else v)
              for c in frame.columns if frame[c].dtype == object and frame[c].map(_is_sequence).any()}
    with private_file(path, "w", encoding="utf-8") as fh:
        (frame.assign(**joined) if joined else frame).to_csv(fh, index=False, float_format="%.6g")


def read_table(path: str | Path) -> pd.DataFrame:
    """One table as ``write_table`` was given it (tuples as tuples, numbers as numbers)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    mixed = json.loads((table.schema.metadata or {}).get(_MIXED.encode(), b"[]"))
    frame = table.to_pandas()
    for column in frame.columns:
        if column in mixed:
            frame[column] = [_number_or_word(v) for v in frame[column]]
        elif frame[column].dtype == object and frame[column].map(lambda v: isinstance(v, np.ndarray)).any():
            frame[column] = frame[column].map(lambda v: tuple(v.tolist()) if isinstance(v, np.ndarray) else v)
    return frame


def _number_or_word(value: Any) -> Any:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value


class RunFolderError(EvalError, PowerContextError, ValueError):
    """A run folder, or one file of it, that cannot be read back; the message names the
    file and what to do."""


_REDO = "rerun the sweep into a new folder (or delete the file to read the rest without it)"


def _read_checked(path: Path) -> pd.DataFrame:
    """``read_table``, with a damaged or truncated file said in one line naming it."""
    try:
        return read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for one cause: a bad file
        raise RunFolderError(f"{path}: not a readable Parquet table ({type(exc).__name__}: {shown(str(exc))}); "
                             f"{_REDO}") from None


class _LazyTables(Mapping):
    """name → table, each file read on first access (and kept): one damaged file fails
    only the reads of that table, never the whole ``load``."""

    def __init__(self, paths: dict[str, Path], complete: Mapping[str, Completer] | None = None) -> None:
        self._paths, self._read, self._complete = paths, {}, dict(complete or {})

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._read:
            frame = _read_checked(self._paths[name])  # KeyError for a name it does not hold
            if name in self._complete:
                frame = self._complete[name](frame, self._paths[name].parent)
            self._read[name] = frame
        return self._read[name]

    def __contains__(self, name: object) -> bool:  # Mapping's would read the table to answer
        return name in self._paths

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


class RunTables:
    """A run folder read back: every table by name (``tables["sweep"]``, also as an
    attribute: ``run.sweep``), ``info`` from summary.json, and the folder. What
    ``ThresholdTuner`` takes as well as a live ``SweepResult``. Each file is read when
    first asked for, so a damaged one (RunFolderError naming it) leaves the others
    readable."""

    def __init__(self, out: Path, tables: Mapping[str, pd.DataFrame] | None = None, info: dict | None = None,
                 info_path: Path | None = None) -> None:
        self.out, self.tables = Path(out), tables if tables is not None else {}
        self._info, self._info_path = info, info_path

    @property
    def info(self) -> dict:
        """summary.json as a dict ({} when the folder has none)."""
        if self._info is None:
            self._info = _read_info(self._info_path) if self._info_path is not None else {}
        return self._info

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(f"the run folder has no table {name!r}; it has: {', '.join(sorted(tables))}")

    def __repr__(self) -> str:
        return f"RunTables({str(self.out)!r}: {', '.join(sorted(self.tables))})"


def _read_info(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunFolderError(f"{path}: not readable JSON ({type(exc).__name__}: {shown(str(exc))}); {_REDO}") from None
    if not isinstance(info, dict):
        raise RunFolderError(f"{path}: holds a JSON {type(info).__name__}, not the summary object; {_REDO}")
    return info


#: ``(table as stored, run folder) → table as written``: what rebuilds a table stored
#: by reference to another file of the folder (explain.parquet's signals live in cache/).
Completer = Callable[[pd.DataFrame, Path], pd.DataFrame]


def load(run: str | Path, complete: Mapping[str, Completer] | None = None) -> RunTables:
    """Every table of a run folder (``<name>.parquet``) and its summary.json, each read
    when first used; a table named in ``complete`` is passed through its completer."""
    out = Path(run)
    if not out.is_dir():
        raise RunFolderError(f"{out}: no such run folder; give the folder a sweep wrote (its --out)")
    paths = sorted(out.glob("*.parquet"))
    if not paths:
        raise RunFolderError(f"{out}: no run tables (*.parquet) here; is it a run folder of this version?")
    return RunTables(out, _LazyTables({p.stem: p for p in paths}, complete), info_path=out / "summary.json")
