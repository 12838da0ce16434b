"""Query groups from a side file, the way LightGBM and XGBoost store them.

A group file holds one positive integer per line: the number of consecutive data lines in each
query, in file order (LightGBM's `FILE.query`, XGBoost's `FILE.group`; `sum = data lines`).
Blank lines and white space around a number are ignored; nothing else is accepted.

Which group file a data file gets (`resolve`):

- an explicit one (`--group FILE`, also .gz/.bz2/.xz) wins;
- otherwise the first of `FILE.query`, `FILE.group` that exists next to FILE (LightGBM's and
  XGBoost's rule: the data file's whole name plus the suffix, so `rank.train.gz.query` for
  `rank.train.gz`), then, for a compressed FILE, `STEM.query`, `STEM.group` with the compression
  extension removed (`rank.train.query` next to `rank.train.gz`: what gzipping only the data file
  leaves). Two of these that disagree are an error (pass --group to choose);
- `-` (standard input) has no neighbours: only an explicit group file applies; a URL (a part on
  s3://, memory://, ...) has them, looked up through fsspec.

Every face finds group files through `resolve` (rankkit.io.svmlight.read_svmlight calls it): the
command line, `rankkit.load_letor`, parts in one process and parts on Dask workers.

The queries of a group file get qids 1..G in file order. A data file that has qid columns too
keeps its qids, and the group file must agree with them: every group exactly one run of
consecutive lines with the same qid (otherwise an error naming the first line where they differ).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from rankkit.errors import DataError
from rankkit.io.files import COMPRESSED, display_name, exists, is_url, read_bytes
from rankkit.text import printable

SUFFIXES = (".query", ".group")
NO_GROUPS = "none"  # --group none: ignore any group file next to the data


class Groups(NamedTuple):
    sizes: np.ndarray  # int64[G], every size >= 1
    source: str  # the group file's name, for messages
    detected: bool  # found next to the data file (not given with --group)

    @property
    def total(self) -> int:
        return int(self.sizes.sum())

    def describe(self, data_name: str) -> str:
        how = "found next to it" if self.detected else "--group"
        return f"{data_name}: {self.sizes.shape[0]} queries from the group file {self.source} ({how})"


def candidates(path: str) -> list[str]:
    """The group files looked for next to `path`, in order of preference."""
    path = str(path)
    names = [path + s for s in SUFFIXES]
    stem, ext = os.path.splitext(path)
    if ext.lower() in COMPRESSED:
        names += [stem + s for s in SUFFIXES]
    return names


def data_file_of(path: str, listed=()) -> str | None:
    """The data file whose group file `path` is (`path` is one of its `candidates`, and that data
    file is among `listed` or exists next to it), else None: LightGBM's `rank.train.query` for
    `rank.train`. Side files only: `rank.train.qid.txt` (the data with qid columns) is data."""
    path = str(path)
    if path == "-":
        return None
    listed = set(map(str, listed))
    for suffix in SUFFIXES:
        if not path.endswith(suffix) or len(path) == len(suffix):
            continue
        stem = path[: -len(suffix)]
        for data in (stem, *(stem + ext for ext in COMPRESSED)):
            if path in candidates(data) and (data in listed or (not is_url(data) and os.path.isfile(data))):
                return data
    return None


def refuse_group_file(path: str, listed=(), what: str = "data file", hint: str = "") -> None:
    """DataError (one line) when `path` is the group file of a data file (data_file_of): read as
    data it would be numbers without qids, and the data file reads it anyway."""
    data = data_file_of(path, listed)
    if data is not None:
        raise DataError(display_name(path), f"this is the group file of {display_name(data)} (the sizes of its "
                        f"queries, read with it), not a {what}{hint}")


def read_group_sizes(path: str) -> np.ndarray:
    """The group sizes in `path` (one positive integer per line) as int64; any other content is a
    DataError `path:line: message 'token'`."""
    name = display_name(path)
    text = bytes(read_bytes(path)).decode("utf-8", "replace")
    sizes = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        tok = line.strip()
        if not tok:
            continue
        if tok.isascii() and tok.isdigit():
            v = int(tok)
            if v == 0:
                raise DataError(name, f"group size '{printable(tok)}' is zero: every query needs at least one "
                                      "document", line_no)
            if v >= 2**62:
                raise DataError(name, f"group size '{printable(tok)}' is too large", line_no)
            sizes.append(v)
            continue
        if len(tok.split()) > 1:
            raise DataError(name, f"line '{printable(tok)}' holds more than one number: a group file has one "
                                  "group size (a count of consecutive data lines) per line", line_no)
        raise DataError(name, f"group size '{printable(tok)}' is not a positive integer (a group file has one "
                              "count of consecutive data lines per line)", line_no)
    if not sizes:
        raise DataError(name, "has no group sizes (it is empty)")
    return np.asarray(sizes, dtype=np.int64)


def existing(path: str) -> list[str]:
    """The group files that exist next to data file `path` (a local path or a URL), in order of
    preference; none for `-`."""
    if path == "-":
        return []
    return [c for c in candidates(path) if exists(c)]


def find_group_file(path: str) -> str | None:
    """The group file next to data file `path` (see the module docstring), None if there is none."""
    found = existing(path)
    if len(found) > 1:
        first = read_group_sizes(found[0])
        for other in found[1:]:
            if not np.array_equal(read_group_sizes(other), first):
                raise DataError(str(path), f"has two group files that disagree, {found[0]} and {other}; "
                                           "pass --group FILE to choose one (or --group none for neither)")
    return found[0] if found else None


def resolve(path: str, groups: str | None = "auto") -> Groups | None:
    """The groups of data file `path`: `groups` is "auto" (look next to the file), None or "none"
    (no group file), or the path of a group file."""
    if groups is None or groups == NO_GROUPS:
        return None
    if groups == "auto":
        found = find_group_file(path)
        if found is None:
            return None
        return Groups(read_group_sizes(found), found, True)
    return Groups(read_group_sizes(groups), display_name(groups), False)


def row_groups(sizes: np.ndarray, first_row: int, n: int) -> np.ndarray:
    """The 1-based group number of rows first_row .. first_row + n - 1; G + 1 past the last group."""
    ends = np.cumsum(sizes)
    return np.searchsorted(ends, np.arange(first_row, first_row + n, dtype=np.int64), side="right").astype(np.int64) + 1


def check_total(groups: Groups, n_rows: int, data_name: str) -> None:
    if groups.total != n_rows:
        raise DataError(groups.source, f"group sizes add up to {groups.total} documents, but {data_name} has "
                                       f"{n_rows} data lines")


def disagreement(file_qid: np.ndarray, group_no: np.ndarray, prev: tuple[int, int] | None = None) -> int:
    """First row where the runs of equal file qid and the groups differ (a qid changes inside a
    group, or a group starts while the qid goes on); -1 if they agree. `prev` is the (qid, group)
    of the row before file_qid[0], for a file read in pieces."""
    if prev is not None:
        file_qid = np.concatenate([[prev[0]], file_qid])
        group_no = np.concatenate([[prev[1]], group_no])
    bad = np.flatnonzero((file_qid[1:] != file_qid[:-1]) != (group_no[1:] != group_no[:-1]))
    if bad.shape[0] == 0:
        return -1
    return int(bad[0]) + (0 if prev is not None else 1)


def disagreement_error(groups: Groups, data_name: str, file_qid: np.ndarray, group_no: np.ndarray, i: int,
                       line: int) -> DataError:
    """The error for rows i - 1 and i (i >= 1 in these arrays) where qids and groups disagree."""
    g = int(group_no[i])
    if group_no[i] == group_no[i - 1]:
        what = f"qid {int(file_qid[i])} starts inside group {g} of {groups.source}"
    else:
        what = f"group {g} of {groups.source} starts here, but qid {int(file_qid[i])} goes on"
    return DataError(data_name, f"{what}: a data file with qids and a group file must agree (each group one qid); "
                                "drop one of them (--group none ignores the group file)", line)


def apply(groups: Groups, qid: np.ndarray, file_has_qid: bool, data_name: str, line_no: np.ndarray) -> np.ndarray:
    """The qid of every row of a whole data file under `groups`: 1..G from the group file, or the
    file's own qids when it has them and they agree with the groups."""
    n = qid.shape[0]
    check_total(groups, n, data_name)
    group_no = row_groups(groups.sizes, 0, n)
    if not file_has_qid:
        return group_no
    i = disagreement(qid, group_no)
    if i >= 0:
        raise disagreement_error(groups, data_name, qid, group_no, i, int(line_no[i]))
    return qid
