"""Release outputs on disk: flat tables, written atomically."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd


def as_table(result: object) -> pd.DataFrame:
    """A released value as a flat table: keys as columns, one row per group."""
    frame = result.to_frame() if isinstance(result, pd.Series) else result
    if not isinstance(frame, pd.DataFrame):
        return pd.DataFrame({"value": [result]})
    if isinstance(frame.index, pd.RangeIndex) or frame.index.names == [None]:
        return frame.reset_index(drop=True)
    return frame.reset_index()


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Write through a temporary file and rename it: a crash leaves the old file or none."""
    temporary = path.with_name(f".{path.name}.tmp")
    write(temporary)
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_outputs(
    table: pd.DataFrame, out_dir: Path, name: str, formats: tuple[str, ...]
) -> list[Path]:
    """Write one query's table as ``<name>.csv`` (and ``.parquet``); returns the paths."""
    paths = []
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        if fmt == "csv":
            write_atomic(path, lambda p: table.to_csv(p, index=False))
        else:
            write_atomic(path, lambda p: table.to_parquet(p, index=False))
        paths.append(path)
    return paths
