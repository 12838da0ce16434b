"""Model files: short self-describing text header, then the weights at full precision, then a checksum.

    rankkit-model 2
    rankkit_version 0.1.0
    solver newton
    ...              (one `key value` per line: every hyperparameter and training fact)
    n_features 46
    weights 46
    0.12345678901234566          (weight of feature 1, `%.17g`: exact double round trip)
    ...
    checksum sha256 5f1c...      (SHA-256 of every byte before this line)

The first line names the format and its version; readers refuse other files and newer versions.
Keys are never removed within a format version, only added; unknown keys are kept and ignored.

Three bodies follow the header:

- dense linear model: `weights N`, then N lines, the weight of feature 1..N (index base 1) or
  0..N-1 (`index_base 0`);
- sparse linear model (format 2 only; written when training used few of many feature indices):
  `weights sparse M N`, then M lines `index value`, indices strictly increasing, in the model's
  index base (the `index_base` header key, like the data it was trained on), each in the model's N
  features; every feature not listed has weight exactly 0. N is the model's number of features and
  equals the header's `n_features`;
- kernel model (a `kernel` header key): `weights N`, then N lines `beta index:value ...`, one per
  landmark, the landmark's features in the model's index base, strictly increasing.

What the reader checks, for every model: the file ends with a newline (a model cut in the middle of
its last number is refused), every number is a number and finite (weights, beta, landmark values,
the kernel's `gamma` > 0 and `coef0`, an integer `degree` >= 1), the counts match the lines that
follow, indices are integers, strictly increasing and inside the model's `n_features`, no header
key is repeated, `n_features` agrees with the body, `index_base` is 0 or 1. Errors are one line naming the model file and,
where there is one, the line.

Format 2 adds the last line `checksum sha256 HEX`, the SHA-256 of every byte of the file before
that line: a missing or different checksum is refused, so a changed digit, a cut, a lost or
doubled line cannot go unnoticed. Models of format 1 (written by rankkit before the checksum) have
no checksum and are still read, with every structural check above, silently: a format-1 model
cannot be verified, only checked (`Model.verified` is False for them, so a caller that wants to say
so can); writing it again (any `rankkit train`) gives a format-2 file.

Feature names (format 2, optional): a model fitted on a data frame records its column names on one
header line, `feature_names ["f0", "f 1", "caf\\\\u00e9", ...]`: a JSON list of strings (ASCII only:
tabs, newlines, '#' and non-ASCII characters are JSON escapes; each backslash doubled, as in every
header value), one name per feature, so `n_features` of them. It is a header key like any other:
covered by the checksum, and a reader older than the key keeps it and ignores it (the weights read
the same). This reader refuses a names line that is not such a list, has another count, or sits in
a format-1 model (which has no checksum to cover it). `Model.feature_names` holds the list.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from rankkit.config import MODEL_FORMAT_VERSION, OLDEST_MODEL_FORMAT
from rankkit.errors import ModelError
from rankkit.io.files import stdin_buffer
from rankkit.io.atomic import atomic_open
from rankkit.text import printable

MAGIC = "rankkit-model"
NAMES_KEY = "feature_names"  # the optional header line of the feature names
# format 1: no checksum, dense and kernel bodies only (the numbers live in rankkit.config, which
# `rankkit --version` reads without importing numpy)
FORMAT_VERSION = MODEL_FORMAT_VERSION
OLDEST_VERSION = OLDEST_MODEL_FORMAT

_UINT = re.compile(r"[0-9]{1,18}\Z")  # ASCII digits only: str.isdigit() also accepts '²', which int() rejects
# A decimal number as %.17g / repr write them (float() alone also accepts '1_0', ' 1', 'infinity')
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_CHECKSUM = re.compile(r"checksum sha256 ([0-9a-f]{64})\Z")
_KERNELS = ("linear", "poly", "rbf")  # rankkit.feature_maps.KERNELS (not imported: the reader stays light)


@dataclass
class Model:
    weights: np.ndarray  # dense: one per feature; sparse: one per feature_index entry; kernel: beta per landmark
    header: dict = field(default_factory=dict)  # ordered key -> value (str, int, float or bool)
    landmarks: object = None  # kernel models: scipy CSR (one row per weight), the documents k(x) uses
    feature_index: np.ndarray | None = None  # sparse linear model: int64 sorted 0-based feature of each weight
    n_total: int | None = None  # sparse linear model: its number of features (largest index + 1)
    source: str = "<model>"  # file name used in messages (read_model sets it)
    verified: bool = False  # read_model: the file carried a checksum and it matched
    feature_names: list | None = None  # the column name of each feature (a model fitted on a data frame)

    @property
    def n_features(self) -> int:
        """Input features the model uses: weights of a linear model, landmark columns of a kernel one."""
        if self.landmarks is not None:
            return int(self.landmarks.shape[1])
        if self.feature_index is not None:
            return int(self.n_total)
        return int(self.weights.shape[0])

    @property
    def zero_based(self) -> bool:
        return str(self.header.get("index_base", "1")) == "0"

    @property
    def sparse(self) -> bool:
        return self.feature_index is not None

    def kernel_args(self) -> tuple[str, float | None, int, float]:
        """(kernel, gamma, degree, coef0) of a kernel model, checked (ModelError naming the model)."""
        try:
            return _kernel_args(self.header, {})
        except _BadKey as exc:
            raise ModelError(self.source, exc.message) from None


class _BadKey(ValueError):
    def __init__(self, key: str, message: str, line: int | None = None):
        super().__init__(message)
        self.key, self.message, self.line = key, message, line


def _kernel_args(header: dict, where: dict) -> tuple[str, float | None, int, float]:
    def bad(key, message):
        return _BadKey(key, message, where.get(key))

    name = str(header.get("kernel"))
    if name not in _KERNELS:
        raise bad("kernel", f"unknown kernel '{shown(name)}' (known: {', '.join(_KERNELS)})")
    gamma = None
    if "gamma" in header:
        text = str(header["gamma"])
        gamma = _float_or_none(text)
        if gamma is None or not gamma > 0.0:
            raise bad("gamma", f"kernel gamma '{shown(text)}' is not a finite number > 0")
    degree = 3
    if "degree" in header:
        text = str(header["degree"])
        if not _UINT.match(text) or int(text) < 1:
            raise bad("degree", f"kernel degree '{shown(text)}' is not an integer >= 1")
        degree = int(text)
    coef0 = 0.0
    if "coef0" in header:
        text = str(header["coef0"])
        coef0 = _float_or_none(text)
        if coef0 is None:
            raise bad("coef0", f"kernel coef0 '{shown(text)}' is not a finite number")
    return name, gamma, degree, coef0


def _float_or_none(text: str) -> float | None:
    """The finite number `text` spells, or None."""
    if not _NUMBER.match(text):
        return None
    v = float(text)
    return v if math.isfinite(v) else None


def _format_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # shortest string that round-trips
    text = str(v)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _parse_value(text: str) -> str:
    """Undo _format_value's escapes (values are read back as strings)."""
    if "\\" not in text:
        return text
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), text)


def shown(text: str) -> str:
    """A token of a model file for an error message: at most 40 characters, one line."""
    return printable(text, 40)


# -- writing ----------------------------------------------------------------------------------------
def _model_text(model: Model) -> str:
    """Everything before the checksum line."""
    w = np.asarray(model.weights, dtype=np.float64)
    if not np.all(np.isfinite(w)):
        raise ValueError("refusing to write a model with non-finite weights")
    lines = [f"{MAGIC} {FORMAT_VERSION}"]
    for key, value in model.header.items():
        if key in ("weights", "checksum", NAMES_KEY) or not key or any(c.isspace() for c in key) or key.startswith("#"):
            raise ValueError(f"bad model header key {key!r}")
        lines.append(f"{key} {_format_value(value)}")
    if model.feature_names is not None:
        lines.append(f"{NAMES_KEY} {_format_value(names_text(model.feature_names, model.n_features))}")
    base = 0 if model.zero_based else 1
    if model.feature_index is not None:
        if model.landmarks is not None:
            raise ValueError("a kernel model has no sparse weights")
        idx = np.asarray(model.feature_index, dtype=np.int64)
        n = int(model.n_total)
        if idx.shape != w.shape or (idx.size and (idx[0] < 0 or idx[-1] >= n or np.any(np.diff(idx) <= 0))):
            raise ValueError("sparse weights need strictly increasing feature indices in [0, n_total)")
        lines.append(f"weights sparse {w.shape[0]} {n}")
        lines.extend(f"{j + base} {'%.17g' % v}" for j, v in zip(idx.tolist(), w.tolist()))
    elif model.landmarks is None:
        lines.append(f"weights {w.shape[0]}")
        lines.extend("%.17g" % v for v in w.tolist())
    else:  # "beta index:value ...": the landmark's features, like an SVMlight model's support vectors
        L = model.landmarks.tocsr(copy=True)
        L.sum_duplicates()  # canonical: sorted, no repeated index (the reader refuses those)
        if not np.all(np.isfinite(L.data)):
            raise ValueError("refusing to write a kernel model with non-finite landmark values")
        lines.append(f"weights {w.shape[0]}")
        for r, beta in enumerate(w.tolist()):
            a, b = L.indptr[r], L.indptr[r + 1]
            feats = " ".join(f"{j + base}:{v!r}" for j, v in zip(L.indices[a:b].tolist(), L.data[a:b].tolist()))
            lines.append(("%.17g" % beta) + (" " + feats if feats else ""))
    return "\n".join(lines) + "\n"


def names_text(names, n_features: int) -> str:
    """The JSON of the feature names line (ValueError unless `n_features` strings)."""
    names = list(names)
    if len(names) != n_features:
        raise ValueError(f"{len(names)} feature names for a model of {n_features} features")
    bad = next((n for n in names if not isinstance(n, str)), None)
    if bad is not None:
        raise ValueError(f"feature names must be strings, not {type(bad).__name__} ({bad!r})")
    return json.dumps(names, ensure_ascii=True)


def write_model(path: str, model: Model) -> None:
    """Write atomically (temp file + rename), the checksum line last."""
    body = _model_text(model).encode("utf-8", "backslashreplace")
    digest = hashlib.sha256(body).hexdigest()
    with atomic_open(path, binary=True) as fh:
        fh.write(body + f"checksum sha256 {digest}\n".encode("ascii"))


# -- reading ----------------------------------------------------------------------------------------
def model_name(path: str) -> str:
    """The model's name in messages: `<stdin>` for `-`."""
    return "<stdin>" if path == "-" else str(path)


def read_model_bytes(path: str, judge=None) -> bytes:
    """The bytes of a model file: `-` is standard input, a `.gz` name is gunzipped. Read in blocks,
    refused at the first NUL byte (every model format is text): `/dev/zero` or a binary file given
    as the model is a ModelError, never read until memory runs out.

    `judge(head, eof)` is called with the bytes read so far (from 64 KB on, then block by block) until
    it returns True: it raises the ModelError of a wrong first line as soon as that line is complete,
    so that a data file given as the model (swapped arguments) is refused after its first block, not
    read whole (rankkit_head_judge: the rankkit reader's judge)."""
    name = model_name(path)
    if path == "-":
        return _text_blocks(stdin_buffer(), name, judge=judge)
    try:
        if str(path).endswith(".gz"):
            try:
                with gzip.open(path, "rb") as fh:
                    return _text_blocks(fh, name, judge=judge)
            except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                raise ModelError(path, f"damaged gzip file ({exc})") from None
        with open(path, "rb") as fh:
            return _text_blocks(fh, name, judge=judge)
    except FileNotFoundError:
        raise ModelError(path, "no such model file") from None
    except IsADirectoryError:
        raise ModelError(path, "is a directory, not a model file") from None
    except OSError as exc:
        raise ModelError(path, f"cannot read ({exc.strerror})") from None


HEAD_BYTES = 1 << 16  # the first read, and the longest first line judged before it ends
BLANK_BYTES = 1 << 22  # blank lines at the start of a would-be rankkit model looked through before refusing it


def _text_blocks(fh, name: str, block: int = 1 << 22, judge=None) -> bytes:
    parts = []
    lines = 1
    size = HEAD_BYTES if judge is not None else block
    while True:
        chunk = fh.read(size)
        size = block
        if not chunk:
            raw = b"".join(parts)
            if judge is not None:
                judge(raw, True)
            return raw
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise ModelError(name, "not a rankkit model file (nor another tool's): binary data, a NUL byte", lines + chunk.count(b"\n", 0, nul))
        lines += chunk.count(b"\n")
        parts.append(chunk)
        if judge is not None and judge(b"".join(parts) if len(parts) > 1 else chunk, False):
            judge = None


def first_line(head: bytes, eof: bool) -> bytes | None:
    """The first line of a file (without its newline) once it is known from the bytes `head` read so
    far: complete, or the whole file at its end, or HEAD_BYTES of a line that has not ended (too long
    to be any model's first line); None while undecided."""
    nl = head.find(b"\n")
    if nl >= 0:
        return head[:nl]
    if eof or len(head) >= HEAD_BYTES:
        return head[:HEAD_BYTES]
    return None


def rankkit_head_judge(path: str):
    """read_model_bytes' judge for a rankkit model: the first line's ModelError (parse_model's)
    as soon as it can be told; blank lines first are looked through up to BLANK_BYTES (a file of
    blank lines only is parse_model's "is empty")."""
    name = model_name(path)

    def judge(head: bytes, eof: bool) -> bool:
        first = first_line(head, eof)
        if first is None:
            return False
        if not first.strip():
            if head.strip():
                _check_first_line(name, "")  # a blank line 1, then something: not a model
            if eof:
                return True  # blank throughout: parse_model's "is empty"
            if len(head) < BLANK_BYTES:
                return False
            raise ModelError(name, f"not a rankkit model file (its first {len(head):,} bytes are blank lines; expected "
                                   f"'{MAGIC} {FORMAT_VERSION}' on line 1)", 1)
        try:
            text = first.decode("utf-8")
        except UnicodeDecodeError:
            _check_undecodable(name, head)
            return True
        _check_first_line(name, text)
        return True

    return judge


_read_bytes = read_model_bytes


def read_model(path: str) -> Model:
    """Read a rankkit model file (`-`: standard input; `.gz`: gzipped); a wrong first line is
    refused before the rest of the file is read."""
    raw = _read_bytes(path, rankkit_head_judge(path))
    return parse_model(model_name(path), raw)


def _check_undecodable(path: str, raw: bytes) -> None:
    """The error for bytes that are not UTF-8 text."""
    expected = f"'{MAGIC} {FORMAT_VERSION}'"
    if raw.startswith(MAGIC.encode() + b" "):
        raise ModelError(path, "damaged model file (bytes that are not UTF-8 text)") from None
    raise ModelError(path, f"not a rankkit model file (binary content; expected {expected})", 1) from None


def _check_first_line(path: str, line: str) -> None:
    """The first line must be `rankkit-model V` with a version this rankkit reads."""
    expected = f"'{MAGIC} {FORMAT_VERSION}'"
    first = line.strip()
    parts = first.split()
    if len(parts) != 2 or parts[0] != MAGIC:
        raise ModelError(path, f"not a rankkit model file (first line '{shown(first)}', expected {expected})", 1)
    version = _uint(path, parts[1], "model format version", 1)
    if version > FORMAT_VERSION:
        raise ModelError(
            path, f"model format version {parts[1]} is newer than this rankkit reads ({FORMAT_VERSION}); upgrade rankkit", 1
        )
    if version < OLDEST_VERSION:
        raise ModelError(path, f"model format version {parts[1]} does not exist (this rankkit reads {OLDEST_VERSION} to {FORMAT_VERSION})", 1)


def parse_model(path: str, raw: bytes) -> Model:
    """A rankkit model from the bytes of file `path`, with every check described above."""
    expected = f"'{MAGIC} {FORMAT_VERSION}'"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        _check_undecodable(path, raw)
    if not text.strip():
        raise ModelError(path, f"is empty, not a rankkit model file (expected {expected} on line 1)")
    lines = text.split("\n")
    _check_first_line(path, lines[0])
    version = int(lines[0].split()[1])
    if lines[-1] != "":
        raise ModelError(path, "incomplete last line: the file does not end with a newline (truncated model?)", len(lines))
    lines.pop()  # the empty string after the final newline
    verified = False
    if version >= 2:
        last = lines[-1]
        where = len(lines)
        m = _CHECKSUM.match(last)
        if m is None:
            if last.startswith("checksum ") and last.endswith("\r"):
                raise ModelError(path, "the model's line endings were changed (CRLF) after it was written", where)
            raise ModelError(path, "no checksum line at the end of the model (truncated or damaged model)", where)
        content = raw[: len(raw) - len(last) - 1]
        if hashlib.sha256(content).hexdigest() != m.group(1):
            raise ModelError(path, "checksum mismatch: the model file was changed or damaged after it was written", where)
        lines.pop()
        verified = True
    model = _parse(path, version, lines)
    model.verified = verified
    if NAMES_KEY in model.header:
        model.feature_names = _feature_names(path, version, model, lines)
    return model


def _feature_names(path: str, version: int, model: Model, lines: list[str]) -> list[str]:
    """The names of the header's feature_names line (removed from the header), checked."""
    text = model.header.pop(NAMES_KEY)
    at = next((k + 1 for k, ln in enumerate(lines) if ln.startswith(NAMES_KEY + " ")), None)
    if version < 2:
        raise ModelError(path, "feature names are not part of format 1 (no checksum covers them)", at)
    try:
        names = json.loads(text)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ModelError(path, f"feature_names '{shown(text)}' is not a JSON list of strings", at)
    if len(names) != model.n_features:
        raise ModelError(path, f"{len(names)} feature names for a model of {model.n_features} features", at)
    return names


def _uint(path: str, text: str, what: str, line: int) -> int:
    if not _UINT.match(text):
        problem = "is too large" if re.fullmatch(r"[0-9]+", text) else "is not an integer"
        raise ModelError(path, f"{what} '{shown(text)}' {problem}", line)
    return int(text)


def _parse(path: str, version: int, lines: list[str]) -> Model:
    """Header and body of complete, checksum-verified (format 2) or unverifiable (format 1) lines."""
    header: dict = {}
    where: dict = {}  # header key -> line number
    i = 1
    count_line = None
    while i < len(lines):
        line = lines[i].rstrip("\r")
        i += 1
        if not line.strip() or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        if key == "weights":
            count_line = (value.strip(), i)
            break
        if key in header:
            raise ModelError(path, f"header key '{shown(key)}' appears twice (first on line {where[key]})", i)
        header[key] = _parse_value(value)
        where[key] = i
    if count_line is None:
        raise ModelError(path, "truncated model file: no 'weights' line")
    count_text, count_at = count_line
    kernel = "kernel" in header
    n_features = None
    if "n_features" in header:
        n_features = _uint(path, header["n_features"], "n_features", where["n_features"])
    elif kernel:
        raise ModelError(path, "kernel model without an 'n_features' line")
    if header.get("index_base", "1") not in ("0", "1"):
        raise ModelError(path, f"index_base '{shown(header['index_base'])}' is not 0 or 1", where["index_base"])
    base = 0 if header.get("index_base", "1") == "0" else 1
    count_parts = count_text.split()
    sparse = len(count_parts) == 3 and count_parts[0] == "sparse"
    if sparse:
        if version < 2 or kernel:
            what = "a kernel model" if kernel else f"format {version}"
            raise ModelError(path, f"sparse weights are not part of {what}", count_at)
        n_weights = _uint(path, count_parts[1], "sparse weights count", count_at)
        n_total = _uint(path, count_parts[2], "sparse weights feature count", count_at)
        if n_features is not None and n_features != n_total:
            raise ModelError(path, f"'weights sparse {n_weights} {n_total}' does not match n_features {n_features}",
                             count_at)
        if n_weights > n_total:
            raise ModelError(path, f"{n_weights} sparse weights but only {n_total} features", count_at)
    else:
        n_weights = _uint(path, count_text, "weights count", count_at)
    body = [ln.strip() for ln in lines[i:]]
    while body and body[-1] == "":
        body.pop()
    if len(body) != n_weights:
        raise ModelError(path, f"expected {n_weights} weights after line {i}, found {len(body)} (truncated or damaged model)")

    def number(token: str, what: str, line: int) -> float:
        v = _float_or_none(token)
        if v is None:
            problem = "is not finite" if _NUMBER.match(token) or token.lower().lstrip("+-") in ("nan", "inf", "infinity") \
                else "is not a number"
            raise ModelError(path, f"{what} '{shown(token)}' {problem}", line)
        return v

    def index(token: str, what: str, line: int, previous: int, limit: int) -> int:
        j = _uint(path, token, what, line) - base
        if j < 0 or j >= limit:
            raise ModelError(path, f"{what} '{shown(token)}' is outside {base}..{limit - 1 + base}", line)
        if j <= previous:
            raise ModelError(path, f"{what} '{shown(token)}' is not above the previous index (repeated or out of order)",
                             line)
        return j

    weights = np.empty(n_weights)
    if sparse:
        feature_index = np.empty(n_weights, dtype=np.int64)
        previous = -1
        for k, line in enumerate(body):
            at = i + 1 + k
            tokens = line.split()
            if len(tokens) != 2:
                raise ModelError(path, f"sparse weight line '{shown(line)}' is not 'index value'", at)
            previous = feature_index[k] = index(tokens[0], "feature index", at, previous, n_total)
            weights[k] = number(tokens[1], "weight", at)
        return Model(weights=weights, header=header, feature_index=feature_index, n_total=n_total, source=path)
    if not kernel:
        if n_features is not None and n_features != n_weights:
            raise ModelError(path, f"n_features {n_features} does not match 'weights {n_weights}'", where["n_features"])
        for k, line in enumerate(body):
            weights[k] = number(line, "weight", i + 1 + k)
        return Model(weights=weights, header=header, source=path)
    try:
        _kernel_args(header, where)
    except _BadKey as exc:
        raise ModelError(path, exc.message, exc.line) from None
    indptr = np.zeros(n_weights + 1, dtype=np.int64)
    cols: list[int] = []
    vals: list[float] = []
    for k, line in enumerate(body):
        at = i + 1 + k
        token, *features = line.split() or [""]
        weights[k] = number(token, "weight", at)
        previous = -1
        for feat in features:
            idx, colon, val = feat.partition(":")
            if not colon:
                raise ModelError(path, f"landmark feature '{shown(feat)}' is not index:value", at)
            previous = index(idx, "landmark feature index", at, previous, n_features)
            cols.append(previous)
            vals.append(number(val, "landmark value", at))
        indptr[k + 1] = len(cols)
    import scipy.sparse as sp

    landmarks = sp.csr_matrix(
        (np.array(vals, dtype=np.float64), np.array(cols, dtype=np.int32), indptr), shape=(n_weights, n_features)
    )
    return Model(weights=weights, header=header, landmarks=landmarks, source=path)
