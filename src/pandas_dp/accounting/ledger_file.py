"""A ledger file: the accountant's write-ahead, hash-chained, append-only record on disk.

Format (JSON lines, one object per line, keys sorted)::

    {"kind": "header", "format": "pandas-dp-ledger/1", "total": {...}, "accounting": ...}
    {"kind": "charge", "sequence": 1, "release": {...}, "output": ..., "by": ..., ...}
    {"kind": "repair", "quarantined_bytes": 812, "quarantined_sha256": ..., ...}

Every line carries ``prev`` (the previous line's hash; 64 zeros for the header) and
``hash``, the SHA-256 of the line's canonical JSON without ``hash``. Editing, reordering or
deleting a line breaks the chain. Deleting the *last* lines leaves a shorter valid chain; the
head hash (:attr:`LedgerFile.head`, printed in reports and by ``pandas-dp ledger``) anchors
it: keep it somewhere else to detect that too.

Crash safety (write-ahead): a charge is appended with one ``write`` and ``fsync``ed before
the accountant returns, and a release is returned only after that, so a crash can leave a
charge without its output (over-counting) but never an output without its charge. A crash
in the middle of the write leaves a *torn* last line without a newline. When that line is
still a complete, valid entry it is kept (it may have been released); otherwise it cannot
have been released, so it is moved to ``<ledger>.torn`` and a ``repair`` line records its
size and hash. A damaged line that *does* end in a newline is not torn: it raises
:class:`~pandas_dp.errors.LedgerError`.

Processes sharing a ledger are serialised by an exclusive lock on ``<ledger>.lock``; every
check and charge first reads what the others appended.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import socket
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pandas_dp.accounting.events import LedgerEntry
from pandas_dp.accounting.file_io import append_durably, exclusive
from pandas_dp.accounting.records import (
    ReleaseJSON,
    budget_from_json,
    budget_to_json,
    release_from_json,
    release_to_json,
)
from pandas_dp.budget import AnyBudget
from pandas_dp.errors import LedgerError

FORMAT = "pandas-dp-ledger/1"
GENESIS = "0" * 64


def canonical(record: Mapping[str, object]) -> bytes:
    """The bytes a record is hashed and written as: sorted keys, no spaces, ASCII."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sealed(record: Mapping[str, object]) -> dict[str, object]:
    """``record`` with its ``hash`` field added."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return {**body, "hash": hashlib.sha256(canonical(body)).hexdigest()}


def who() -> str:
    """``user@host pid N``: who charged a release (public metadata, not data)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name in some containers
        user = "unknown"
    return f"{user}@{socket.gethostname()} pid {os.getpid()}"


class LedgerFile:
    """One ledger file, read and appended under its lock.

    Parameters
    ----------
    path : str or Path
        The JSON-lines file; created with a header by :meth:`open` if it does not exist.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.torn_path = self.path.with_name(self.path.name + ".torn")
        self.total: AnyBudget | None = None
        self.accounting = ""
        self.ledger_id = ""
        self.head = GENESIS
        self._offset = 0
        self._last_start = 0  # where the last line read or written starts
        self._lines = 0

    def __repr__(self) -> str:
        return f"<LedgerFile {str(self.path)!r}: {self._lines} lines, head {self.head[:12]}>"

    # -- opening ---------------------------------------------------------------------------
    def open(self, total: AnyBudget | None, accounting: str) -> list[LedgerEntry]:
        """Create the ledger, or read an existing one and check it matches.

        ``total=None`` adopts the existing ledger's budget. Returns the charged entries.
        """
        with self.locked():
            if not self.path.exists() or self.path.stat().st_size == 0:
                if total is None:
                    raise LedgerError(
                        f"the ledger {self.path} does not exist yet, so there is no budget to "
                        "resume: pass epsilon=... (and delta=...) to start it"
                    )
                self._write_header(total, accounting)
                return []
            entries = self.read_new()
            if total is not None:
                self.check_budget(total, accounting)
            return entries

    def check_budget(self, total: AnyBudget, accounting: str) -> None:
        """Raise :class:`LedgerError` unless the ledger holds this budget and rule."""
        if total != self.total or accounting != self.accounting:
            raise LedgerError(
                f"the ledger {self.path} holds a budget of {self.total} under "
                f"{self.accounting} accounting, but {total} under {accounting} accounting "
                "was given. A ledger's budget cannot be changed or restarted: pass the same "
                "budget (or none, to resume it), or have the data owner start a new ledger."
            )

    def _write_header(self, total: AnyBudget, accounting: str) -> None:
        header = sealed(
            {
                "kind": "header",
                "format": FORMAT,
                "ledger_id": uuid.uuid4().hex,
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
                "by": who(),
                "total": budget_to_json(total),
                "accounting": accounting,
                "prev": GENESIS,
            }
        )
        self._write(header)
        self._adopt_header(header)

    def _adopt_header(self, header: dict[str, Any]) -> None:
        if header.get("format") != FORMAT:
            raise LedgerError(
                f"{self.path} is not a pandas-dp ledger (format {header.get('format')!r}, "
                f"expected {FORMAT!r})"
            )
        self.total = budget_from_json(header["total"])
        self.accounting = str(header["accounting"])
        self.ledger_id = str(header["ledger_id"])

    # -- locking and writing ---------------------------------------------------------------
    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The exclusive inter-process lock; hold it across read, check and append."""
        return exclusive(self.lock_path)

    def _write(self, record: Mapping[str, object]) -> None:
        data = canonical(record) + b"\n"
        append_durably(self.path, data)
        self._advance(record, len(data))

    def _advance(self, record: Mapping[str, object], length: int) -> None:
        self._last_start = self._offset
        self._offset += length
        self._lines += 1
        self.head = str(record["hash"])  # a hex digest (sealed, or verified against one)

    def append(self, entry: LedgerEntry, release_json: ReleaseJSON | None = None) -> None:
        """Append a charge and fsync it. Call under :meth:`locked`, after :meth:`read_new`."""
        record = sealed(
            {
                "kind": "charge",
                "sequence": entry.sequence,
                "time": entry.time,
                "by": entry.by,
                "release": release_json or release_to_json(entry.release),
                "output": entry.output,
                "prev": self.head,
            }
        )
        self._write(record)

    # -- reading ---------------------------------------------------------------------------
    def read_new(self) -> list[LedgerEntry]:
        """Verify and return the entries appended since the last read (by anyone).

        Call under :meth:`locked`. Repairs a torn last line (see the module docstring).
        """
        size = self.path.stat().st_size
        if size < self._offset:
            raise LedgerError(
                f"the ledger {self.path} shrank from {self._offset} to {size} bytes since it "
                "was last read: charges were removed. Restore it from a backup."
            )
        with open(self.path, "rb") as handle:
            handle.seek(self._last_start)
            known = handle.read(self._offset - self._last_start)
            data = handle.read()
        if self._lines and not self._is_head(known):
            raise LedgerError(
                f"the ledger {self.path} was rewritten since this process last read it (lines "
                f"1-{self._lines} are no longer what they were). Restore it from a backup."
            )
        end = data.rfind(b"\n") + 1  # everything up to the last newline is complete lines
        torn = data[end:]
        entries: list[LedgerEntry] = []
        for raw in data[:end].split(b"\n")[:-1]:
            record = self._verified(raw, self._lines + 1)
            self._advance(record, len(raw) + 1)
            entry = self._entry(record)
            if entry is not None:
                entries.append(entry)
        if torn:
            entries.extend(self._repair(torn))
        return entries

    def _is_head(self, line: bytes) -> bool:
        """Whether ``line`` is still the last line this object read or wrote."""
        try:
            record = json.loads(line)
        except ValueError:
            return False
        return (
            line.endswith(b"\n")
            and isinstance(record, dict)
            and (sealed(record)["hash"] == record.get("hash") == self.head)
        )

    def _verified(self, raw: bytes, number: int) -> dict[str, Any]:
        problem = ""
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            record, problem = {}, "is not valid JSON"
        if not problem and not isinstance(record, dict):
            problem = "is not a JSON object"
        elif not problem and sealed(record).get("hash") != record.get("hash"):
            problem = "does not match its checksum (it was edited or damaged)"
        elif not problem and record.get("prev") != self.head:
            problem = "does not follow the line before it (lines were removed or reordered)"
        elif not problem and (number == 1) != (record.get("kind") == "header"):
            problem = "is in the wrong place (a ledger starts with exactly one header)"
        if problem:
            raise LedgerError(
                f"line {number} of the ledger {self.path} {problem}. pandas-dp will not charge "
                "against a ledger it cannot trust; restore the file from a backup (the spent "
                "budget is whatever the intact ledger says)."
            )
        return record

    def _entry(self, record: dict[str, Any]) -> LedgerEntry | None:
        kind = record["kind"]
        if kind == "header":
            self._adopt_header(record)
            return None
        if kind == "repair":
            return None
        if kind != "charge":
            raise LedgerError(f"the ledger {self.path} has an unknown line kind {kind!r}")
        return LedgerEntry(
            sequence=int(record["sequence"]),
            release=release_from_json(record["release"]),
            time=str(record["time"]),
            by=str(record["by"]),
            output=record.get("output"),
        )

    def _repair(self, torn: bytes) -> list[LedgerEntry]:
        """Handle a last line without its newline: keep it if complete, else quarantine it."""
        try:
            record = self._verified(torn, self._lines + 1)
        except LedgerError:
            record = None
        if record is not None:  # the whole entry reached the disk: count it (conservative)
            append_durably(self.path, b"\n")
            self._advance(record, len(torn) + 1)
            entry = self._entry(record)
            return [] if entry is None else [entry]
        append_durably(self.torn_path, torn + b"\n")
        with open(self.path, "r+b") as handle:  # drop the partial write, then log that we did
            handle.truncate(self._offset)
            handle.flush()
            os.fsync(handle.fileno())
        repair = sealed(
            {
                "kind": "repair",
                "time": datetime.now(UTC).isoformat(timespec="microseconds"),
                "by": who(),
                "quarantined_bytes": len(torn),
                "quarantined_sha256": hashlib.sha256(torn).hexdigest(),
                "quarantined_to": self.torn_path.name,
                "note": "an interrupted write: the entry never completed, so its release "
                "was never returned (charges are written before results)",
                "prev": self.head,
            }
        )
        self._write(repair)
        return []


def read_ledger(path: str | os.PathLike[str]) -> tuple[LedgerFile, list[LedgerEntry]]:
    """Read and verify a whole ledger without changing it (except repairing a torn line)."""
    ledger = LedgerFile(path)
    if not ledger.path.exists():
        raise LedgerError(f"no ledger at {ledger.path}")
    with ledger.locked():
        entries = ledger.read_new()
    if ledger.total is None:
        raise LedgerError(f"the ledger {ledger.path} is empty (no header)")
    return ledger, entries
