"""Model files: short self-describing text header, then the weights at full precision.

    rankkit-model 1
    rankkit_version 0.1.0
    solver newton
    ...              (one `key value` per line: every hyperparameter and training fact)
    weights 46
    0.12345678901234566          (weight of feature 1, `%.17g`: exact double round trip)
    ...

The first line names the format and its version; readers refuse other files and newer versions.
Keys are never removed within a format version, only added; unknown keys are kept and ignored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from rankkit.errors import ModelError
from rankkit.io.atomic import atomic_open

MAGIC = "rankkit-model"
FORMAT_VERSION = 1

_UINT = re.compile(r"[0-9]+\Z")  # ASCII digits only: str.isdigit() also accepts '²', which int() rejects


@dataclass
class Model:
    weights: np.ndarray
    header: dict = field(default_factory=dict)  # ordered key -> value (str, int, float or bool)
    landmarks: object = None  # kernel models: scipy CSR (one row per weight), the documents k(x) uses

    @property
    def n_features(self) -> int:
        """Input features the model uses: weights of a linear model, landmark columns of a kernel one."""
        if self.landmarks is not None:
            return int(self.landmarks.shape[1])
        return int(self.weights.shape[0])

    @property
    def zero_based(self) -> bool:
        return str(self.header.get("index_base", "1")) == "0"


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


def _shown(text: str, limit: int = 40) -> str:
    """`text` for an error message: shortened, control characters escaped, so it stays one line."""
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def write_model(path: str, model: Model) -> None:
    """Write atomically (temp file + rename)."""
    lines = [f"{MAGIC} {FORMAT_VERSION}"]
    for key, value in model.header.items():
        if key in ("weights",) or not key or any(c.isspace() for c in key):
            raise ValueError(f"bad model header key {key!r}")
        lines.append(f"{key} {_format_value(value)}")
    lines.append(f"weights {model.weights.shape[0]}")
    if model.landmarks is None:
        lines.extend("%.17g" % v for v in model.weights.tolist())
    else:  # "beta index:value ...": the landmark's features, like an SVMlight model's support vectors
        L = model.landmarks.tocsr()
        base = 0 if model.zero_based else 1
        for r, beta in enumerate(model.weights.tolist()):
            a, b = L.indptr[r], L.indptr[r + 1]
            feats = " ".join(f"{j + base}:{v!r}" for j, v in zip(L.indices[a:b].tolist(), L.data[a:b].tolist()))
            lines.append(("%.17g" % beta) + (" " + feats if feats else ""))
    with atomic_open(path) as fh:
        fh.write("\n".join(lines) + "\n")


def read_model(path: str) -> Model:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise ModelError(path, "no such model file") from None
    except IsADirectoryError:
        raise ModelError(path, "is a directory, not a model file") from None
    except OSError as exc:
        raise ModelError(path, f"cannot read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError(path, f"not a rankkit model file (binary content; expected '{MAGIC} {FORMAT_VERSION}')", 1) from None
    if not text.strip():
        raise ModelError(path, f"is empty, not a rankkit model file (expected '{MAGIC} {FORMAT_VERSION}' on line 1)")
    lines = text.split("\n")
    first = lines[0].strip()
    parts = first.split()
    if len(parts) != 2 or parts[0] != MAGIC:
        raise ModelError(
            path, f"not a rankkit model file (first line '{_shown(first)}', expected '{MAGIC} {FORMAT_VERSION}')", 1
        )
    if not _UINT.match(parts[1]):
        raise ModelError(path, f"model format version '{_shown(parts[1])}' is not an integer", 1)
    if int(parts[1]) > FORMAT_VERSION:
        raise ModelError(
            path, f"model format version {parts[1]} is newer than this rankkit reads ({FORMAT_VERSION}); upgrade rankkit", 1
        )
    header: dict = {}
    i = 1
    n_weights = None
    while i < len(lines):
        line = lines[i].rstrip("\r")
        i += 1
        if not line.strip() or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        if key == "weights":
            if not _UINT.match(value.strip()):
                raise ModelError(path, f"weights count '{_shown(value)}' is not an integer", i)
            n_weights = int(value)
            break
        header[key] = _parse_value(value)
    if n_weights is None:
        raise ModelError(path, "truncated model file: no 'weights' line")
    body = [ln.strip() for ln in lines[i:]]
    while body and body[-1] == "":
        body.pop()
    if len(body) != n_weights:
        raise ModelError(path, f"expected {n_weights} weights after line {i}, found {len(body)} (truncated or damaged model)")
    weights = np.empty(n_weights)
    kernel = "kernel" in header
    rows, cols, vals = [], [], []
    base = 0 if str(header.get("index_base", "1")) == "0" else 1
    for k, line in enumerate(body):
        token, *features = line.split() if kernel else (line,)
        try:
            v = float(token)
        except ValueError:
            raise ModelError(path, f"weight '{_shown(token)}' is not a number", i + 1 + k) from None
        if not math.isfinite(v):
            raise ModelError(path, f"weight '{_shown(token)}' is not finite", i + 1 + k)
        weights[k] = v
        for feat in features:
            idx, _, val = feat.partition(":")
            try:
                rows.append(k)
                cols.append(int(idx) - base)
                vals.append(float(val))
            except ValueError:
                raise ModelError(path, f"landmark feature '{_shown(feat)}' is not index:value", i + 1 + k) from None
    landmarks = None
    if kernel:
        import scipy.sparse as sp

        try:
            n_features = int(header.get("n_features", "0"))
        except ValueError:
            raise ModelError(path, "n_features is not an integer") from None
        if cols and (min(cols) < 0 or max(cols) >= n_features):
            raise ModelError(path, f"a landmark feature index is outside 1..{n_features}")
        landmarks = sp.csr_matrix((vals, (rows, cols)), shape=(n_weights, n_features))
    return Model(weights=weights, header=header, landmarks=landmarks)
