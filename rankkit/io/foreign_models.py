"""Linear models written by the tools people migrate from: read, detect, write.

Formats (each checked against the tool's own reader and predict program; see
tests/data/foreign/README.md for the fixtures made with the real tools):

- `svm_rank`: SVMlight's model file (`SVM-light Version V6.20`), as written by svm_rank_learn,
  svm_learn and svm_perf. Header lines `value # comment` (kernel type, parameters, highest feature
  index, training documents, number of support vectors plus 1, threshold b), then one line per
  support vector `alpha*y [qid:Q] index:value ... #`. Only linear models (kernel type 0) are read.
  As svm_classify / svm_rank_classify do: the weight vector is the sum of alpha * value over the
  support vectors, in file order, each value stored as a C float (SVMlight's FVAL) and summed in
  double; a document's feature values are also stored as floats; features above the model's
  highest index are dropped; score = w.x - b.
- `liblinear`: liblinear's and liblinear-ranksvm's model file: `solver_type S`, `nr_class K`,
  optional `label ...`, `nr_feature N`, `bias B`, then `w` and one weight per line (N of them, plus
  one for the bias feature when B >= 0). As predict does: features above N are dropped, and when
  B >= 0 a last feature N+1 of value B is added; score = the decision value (what predict prints
  for ranksvm and regression solvers; for a two-class classifier, predict prints the label and
  the score here is the decision value of the first label). Models with one weight column per
  class (multi-class) have no single score and are refused.
- `sofia-ml`: one line of numbers, the weight of feature 0, 1, 2, ... Feature 0 is sofia-ml's bias
  feature, x_0 = 1 for every document (sofia-ml's default; its `--no_bias_term` sets x_0 = 0).
  Data features are numbered from 1. sofia-ml computes in C floats: weights and values rounded to
  float, products and sums in float, in the order of the document's features after x_0; the scores
  here do the same, so that they equal sofia-ml's to the last bit. A feature beyond the model's
  dimension is undefined behaviour in sofia-ml (an out-of-bounds read); here its weight is 0.

Every damaged file gives one ModelError naming the file and, where there is one, the line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from rankkit.config import MODEL_FORMATS
from rankkit.errors import ModelError, UsageError
from rankkit.io.model import BLANK_BYTES, MAGIC, first_line, model_name, parse_model, rankkit_head_judge, read_model_bytes, shown

FORMATS = MODEL_FORMATS
FOREIGN = FORMATS[1:]
TOOL = {"svm_rank": "svm_rank/SVMlight", "liblinear": "liblinear", "sofia-ml": "sofia-ml"}

# What C's strtod accepts and a model may hold: a finite decimal number.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INT = re.compile(r"[+-]?[0-9]{1,18}\Z")
_SVMLIGHT_MAGIC = re.compile(r"SVM-light Version (\S+)\s*\Z")
_SVMLIGHT_KERNELS = {0: "linear", 1: "polynomial", 2: "rbf", 3: "sigmoid", 4: "custom"}
# liblinear's solver_type_table (linear.cpp), index = solver number; "" entries are unused numbers
_LIBLINEAR_SOLVERS = ("L2R_LR", "L2R_L2LOSS_SVC_DUAL", "L2R_L2LOSS_SVC", "L2R_L1LOSS_SVC_DUAL", "MCSVM_CS",
                      "L1R_L2LOSS_SVC", "L1R_LR", "L2R_LR_DUAL", "L2R_L2LOSS_RANKSVM", "", "",
                      "L2R_L2LOSS_SVR", "L2R_L2LOSS_SVR_DUAL", "L2R_L1LOSS_SVR_DUAL")
_LIBLINEAR_KEYS = ("solver_type", "nr_class", "label", "nr_feature", "bias", "w")


@dataclass
class ForeignModel:
    """A linear model of another tool, scored the way that tool's predict program scores.

    weights[j] is the weight of feature j + 1 (the tools number features from 1), as the tool
    computes with it before any float rounding of its own; `constant` is added to every score
    (liblinear: bias weight x bias; sofia-ml: the weight of x_0 = 1; svm_rank: -b)."""

    format: str
    weights: np.ndarray
    constant: float = 0.0
    source: str = "<model>"
    info: dict = field(default_factory=dict)
    bias_weight: float = 0.0  # liblinear with bias >= 0: the weight of feature nr_feature + 1
    bias: float = -1.0  # liblinear's bias value (< 0: no bias feature)
    verified: bool = True  # nothing to verify: foreign formats carry no checksum (predict's format-1 note does not apply)

    @property
    def n_features(self) -> int:
        return int(self.weights.shape[0])

    @property
    def zero_based(self) -> bool:
        return False

    @property
    def landmarks(self):  # never a kernel model
        return None

    @property
    def feature_index(self):
        return None


# -- detection and reading --------------------------------------------------------------------------
def detect_format(raw: bytes) -> str | None:
    """The format a model file's first line announces, or None."""
    if raw.startswith(MAGIC.encode()):
        return "rankkit"
    first = raw.split(b"\n", 1)[0].strip()
    if first.startswith(b"SVM-light Version"):
        return "svm_rank"
    if first.split(b" ", 1)[0] == b"solver_type":
        return "liblinear"
    tokens = first.split()
    try:
        text = [t.decode("ascii") for t in tokens]
    except UnicodeDecodeError:
        return None
    if text and all(_NUMBER.match(t) for t in text):
        rest = raw.split(b"\n", 1)[1] if b"\n" in raw else b""
        if not rest.strip():  # sofia-ml's model is one line; a column of numbers is something else
            return "sofia-ml"
    return None


def load_model(path: str, model_format: str | None = None):
    """A rankkit Model or a ForeignModel from `path` (`-`: standard input, `.gz`: gunzipped),
    in `model_format` or the format its first line announces (rankkit when none does, so that an
    unknown file gets the rankkit reader's message)."""
    name = model_name(path)
    raw = read_model_bytes(path, _head_judge(path, model_format))
    fmt = model_format or detect_format(raw) or "rankkit"
    if fmt == "rankkit":
        return parse_model(name, raw)
    return parse_foreign(name, raw, fmt)


def _head_judge(path: str, model_format: str | None):
    """read_model_bytes' judge: the first line of the file judged as soon as it is complete, by the
    reader of `model_format` or of the format it announces (detect_format), with that reader's
    message; the rest is read only when the first line may begin a model."""
    name = model_name(path)
    rankkit_judge = rankkit_head_judge(path)

    def judge(head: bytes, eof: bool) -> bool:
        first = first_line(head, eof)
        if first is None:
            return False
        complete = eof or head.find(b"\n") >= 0  # else: HEAD_BYTES of a first line that goes on
        fmt = model_format
        if fmt is None:
            fmt = detect_format(head)
            if fmt is None and not eof and first.strip() and head.find(b"\n") >= 0:
                tokens = first.split()
                if all(_NUMBER.match(t.decode("latin-1")) for t in tokens) and not head[len(first) + 1:].strip():
                    return True  # a line of numbers and nothing else so far: sofia-ml's, perhaps; read on
            fmt = fmt or "rankkit"
        if fmt == "sofia-ml" and not complete:
            return True  # a long line of weights (its last token cut here): judged once read
        if fmt == "rankkit":
            return rankkit_judge(head, eof)
        if not first.strip():  # blank lines first: looked through up to BLANK_BYTES
            filled = len(head) - len(head.lstrip())
            if filled < len(head):
                if fmt == "sofia-ml":  # _read_sofia: the weights are on line 1
                    raise ModelError(name, "not a sofia-ml model: it is one line of weights (feature 0, 1, 2, ...)",
                                     1 + head.count(b"\n", 0, filled))
                return True
            if eof or len(head) < BLANK_BYTES:
                return eof
            raise ModelError(name, f"not a {TOOL[fmt]} model (its first {len(head):,} bytes are blank lines)", 1)
        try:
            text = first.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            return True  # parse_foreign's message, with its line, once the file is read
        if fmt == "svm_rank" and _SVMLIGHT_MAGIC.match(text.strip()) is None:
            raise ModelError(name, f"not an svm_rank/SVMlight model (first line '{shown(text)}', "
                             "expected 'SVM-light Version V6.20')", 1)
        if fmt == "liblinear" and text.split() and text.split()[0] not in _LIBLINEAR_KEYS:
            raise ModelError(name, f"not a liblinear model (first line '{shown(text)}', expected 'solver_type ...')", 1)
        if fmt == "sofia-ml" and text.strip():
            rest = head[len(first) + 1:] if len(head) > len(first) else b""
            filled = len(rest) - len(rest.lstrip())
            if filled < len(rest):  # a second line that is not blank: _read_sofia's first complaint
                raise ModelError(name, "not a sofia-ml model: it is one line of weights (feature 0, 1, 2, ...)",
                                 2 + rest.count(b"\n", 0, filled))
            for i, t in enumerate(text.split()):
                _number(name, t, f"weight {i}", 1)
        return True

    return judge


def parse_foreign(name: str, raw: bytes, fmt: str) -> ForeignModel:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ModelError(name, f"not a {TOOL[fmt]} model (bytes that are not text)", line) from None
    if not text.strip():
        raise ModelError(name, f"is empty, not a {TOOL[fmt]} model")
    if not text.endswith("\n"):
        # Every tool ends every line of its model with a newline; a file whose last line has none
        # was cut (a full disk, a copy interrupted), possibly mid-number: its weights would be wrong.
        raise ModelError(name, f"truncated {TOOL[fmt]} model: the last line does not end with a newline, as every "
                         f"line {TOOL[fmt]} writes does (cut mid-line?)", text.count("\n") + 1)
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    if lines[-1] == "":
        lines.pop()
    reader = {"svm_rank": _read_svmlight, "liblinear": _read_liblinear, "sofia-ml": _read_sofia}[fmt]
    return reader(name, lines)


def _number(name: str, token: str, what: str, line: int) -> float:
    if not _NUMBER.match(token):
        raise ModelError(name, f"{what} '{shown(token)}' is not a finite number", line)
    v = float(token)
    if not math.isfinite(v):
        raise ModelError(name, f"{what} '{shown(token)}' is not a finite number", line)
    return v


def _int(name: str, token: str, what: str, line: int, low: int | None = None) -> int:
    if not _INT.match(token):
        raise ModelError(name, f"{what} '{shown(token)}' is not an integer", line)
    v = int(token)
    if low is not None and v < low:
        raise ModelError(name, f"{what} '{shown(token)}' is below {low}", line)
    return v


_SVMLIGHT_HEADER = ("kernel type", "kernel parameter -d", "kernel parameter -g", "kernel parameter -s",
                    "kernel parameter -r", "kernel parameter -u", "highest feature index",
                    "number of training documents", "number of support vectors plus 1", "threshold b")


def _read_svmlight(name: str, lines: list[str]) -> ForeignModel:
    m = _SVMLIGHT_MAGIC.match(lines[0].strip())
    if m is None:
        raise ModelError(name, f"not an svm_rank/SVMlight model (first line '{shown(lines[0])}', "
                         "expected 'SVM-light Version V6.20')", 1)
    def value(k: int) -> tuple[str, int]:
        if k >= len(lines):
            raise ModelError(name, f"truncated svm_rank/SVMlight model: no '{_SVMLIGHT_HEADER[k - 1]}' line "
                             f"(line {k + 1})")
        token = lines[k].split("#", 1)[0].split()
        if not token:
            raise ModelError(name, f"no value on the '{_SVMLIGHT_HEADER[k - 1]}' line", k + 1)
        return token[0], k + 1

    kernel = _int(name, value(1)[0], "kernel type", 2)
    if kernel != 0:
        kname = _SVMLIGHT_KERNELS.get(kernel, "unknown")
        raise ModelError(name, f"kernel type {kernel} ({kname}): only linear svm_rank/SVMlight models "
                         "(kernel type 0) can be read", 2)
    _int(name, value(2)[0], "kernel parameter -d", 3)
    for k in (3, 4, 5):
        _number(name, value(k)[0], _SVMLIGHT_HEADER[k - 1], k + 1)
    totwords = _int(name, value(7)[0], "highest feature index", 8, low=0)
    totdoc = _int(name, value(8)[0], "number of training documents", 9, low=0)
    sv_num = _int(name, value(9)[0], "number of support vectors plus 1", 10, low=1)
    b = _number(name, value(10)[0], "threshold b", 11)
    body = lines[11:]
    while body and not body[-1].strip():
        body.pop()
    n_sv = sv_num - 1
    if len(body) != n_sv:
        raise ModelError(name, f"{n_sv} support vectors announced on line 10, found {len(body)} lines after "
                         "line 11 (truncated or damaged model)", 10 if len(body) > n_sv else None)
    alphas = np.empty(n_sv)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for k, line in enumerate(body):
        at = 12 + k
        if "#" not in line:  # SVMlight ends every support vector with '#' (and its comment, if any)
            raise ModelError(name, "support vector line without its closing '#' (truncated or damaged model)", at)
        tokens = line.split("#", 1)[0].split()
        if not tokens:
            raise ModelError(name, "empty support vector line (expected 'alpha index:value ... #')", at)
        alphas[k] = _number(name, tokens[0], "support vector coefficient", at)
        previous = 0
        for tok in tokens[1:]:
            idx, colon, val = tok.partition(":")
            if not colon:
                raise ModelError(name, f"support vector feature '{shown(tok)}' is not index:value", at)
            if idx in ("qid", "sid", "cost"):
                continue
            j = _int(name, idx, "feature index", at, low=1)
            if j <= previous:
                raise ModelError(name, f"feature index '{shown(idx)}' is not above the previous index", at)
            if j > totwords:
                raise ModelError(name, f"feature index '{shown(idx)}' is above the model's highest feature index "
                                 f"{totwords} (line 8)", at)
            previous = j
            rows.append(k)
            cols.append(j - 1)
            vals.append(_number(name, val, "support vector value", at))
    # SVMlight: lin_weights[j] += alpha * (double)(float)value, support vectors in file order
    w = np.zeros(totwords)
    if cols:
        with np.errstate(over="ignore"):
            v32 = np.asarray(vals, dtype=np.float64).astype(np.float32).astype(np.float64)
        if not np.all(np.isfinite(v32)):
            raise ModelError(name, "a support vector value overflows a C float (SVMlight stores values as floats)")
        np.add.at(w, np.asarray(cols), alphas[np.asarray(rows)] * v32)
    if not np.all(np.isfinite(w)):
        raise ModelError(name, "the weights (sums of alpha x value over the support vectors) overflow")
    info = {"version": m.group(1), "threshold_b": b, "support_vectors": n_sv, "training_documents": totdoc}
    return ForeignModel("svm_rank", w, constant=-b, source=name, info=info)


def _read_liblinear(name: str, lines: list[str]) -> ForeignModel:
    header: dict = {}
    where: dict = {}
    k = 0
    while True:
        if k >= len(lines):
            raise ModelError(name, "truncated liblinear model: no 'w' line")
        line = lines[k]
        k += 1
        tokens = line.split()
        if not tokens:
            continue
        key = tokens[0]
        if key not in _LIBLINEAR_KEYS:
            if k == 1:
                raise ModelError(name, f"not a liblinear model (first line '{shown(line)}', expected 'solver_type ...')", 1)
            raise ModelError(name, f"unknown text in liblinear model: '{shown(key)}'", k)
        if key in header:
            raise ModelError(name, f"'{key}' appears twice (first on line {where[key]})", k)
        where[key] = k
        if key == "w":
            header[key] = True
            break
        header[key] = tokens[1:]
        if key != "label" and len(tokens) != 2:
            raise ModelError(name, f"'{key}' line '{shown(line)}' is not '{key} VALUE'", k)
    for key in ("solver_type", "nr_class", "nr_feature"):
        if key not in header:
            raise ModelError(name, f"liblinear model without a '{key}' line before 'w'", where["w"])
    solver = header["solver_type"][0]
    if solver not in _LIBLINEAR_SOLVERS or not solver:
        raise ModelError(name, f"unknown liblinear solver_type '{shown(solver)}'", where["solver_type"])
    nr_class = _int(name, header["nr_class"][0], "nr_class", where["nr_class"], low=1)
    nr_feature = _int(name, header["nr_feature"][0], "nr_feature", where["nr_feature"], low=0)
    bias = _number(name, header["bias"][0], "bias", where["bias"]) if "bias" in header else -1.0
    labels = None
    if "label" in header:
        labels = [_int(name, t, "label", where["label"]) for t in header["label"]]
        if len(labels) != nr_class:
            raise ModelError(name, f"{len(labels)} labels for nr_class {nr_class}", where["label"])
    nr_w = 1 if nr_class == 2 and solver != "MCSVM_CS" else nr_class
    if nr_w != 1:
        raise ModelError(name, f"a multi-class model ({nr_class} classes, {solver}) has no single score to rank by",
                         where["nr_class"])
    w_size = nr_feature + (1 if bias >= 0 else 0)
    body = lines[k:]
    while body and not body[-1].strip():
        body.pop()
    if len(body) != w_size:
        what = f"{nr_feature} weights" + (" and the bias weight" if bias >= 0 else "")
        raise ModelError(name, f"expected {what} after line {k} ('w'), found {len(body)} lines "
                         "(truncated or damaged model)", k if len(body) > w_size else None)
    w = np.empty(w_size)
    for i, line in enumerate(body):
        tokens = line.split()
        if len(tokens) != 1:
            raise ModelError(name, f"weight line '{shown(line)}' does not hold one number", k + 1 + i)
        w[i] = _number(name, tokens[0], "weight", k + 1 + i)
    bias_weight = float(w[nr_feature]) if bias >= 0 else 0.0
    info = {"solver_type": solver, "nr_class": nr_class, "bias": bias}
    if labels is not None:
        info["label"] = " ".join(map(str, labels))
    return ForeignModel("liblinear", w[:nr_feature].copy(), constant=bias_weight * bias if bias >= 0 else 0.0,
                        source=name, info=info, bias_weight=bias_weight, bias=bias)


def _read_sofia(name: str, lines: list[str]) -> ForeignModel:
    filled = [(k + 1, ln) for k, ln in enumerate(lines) if ln.strip()]
    if len(filled) != 1 or filled[0][0] != 1:
        at = filled[1][0] if len(filled) > 1 else (filled[0][0] if filled else None)
        raise ModelError(name, "not a sofia-ml model: it is one line of weights (feature 0, 1, 2, ...)", at)
    tokens = lines[0].split()
    w = np.array([_number(name, t, f"weight {i}", 1) for i, t in enumerate(tokens)], dtype=np.float64)
    with np.errstate(over="ignore"):
        fits = np.all(np.isfinite(w.astype(np.float32)))
    if not fits:
        raise ModelError(name, "a weight overflows a C float (sofia-ml stores weights as floats)", 1)
    return ForeignModel("sofia-ml", w[1:].copy(), constant=float(w[0]), source=name, info={"dimensionality": w.size})


# -- the linear model behind any model ---------------------------------------------------------------
def linear_view(model, to: str) -> tuple[np.ndarray, float]:
    """(weights of features 1..N, constant) of a rankkit or foreign linear model; a UsageError for
    what a linear format cannot hold."""
    if isinstance(model, ForeignModel):
        return model.weights, model.constant
    if model.landmarks is not None:
        raise UsageError(f"{model.source}: a kernel model (kernel {model.header.get('kernel')}) cannot be converted "
                         f"to {to}: its scores are not a linear function of the features")
    n = model.n_features
    if model.feature_index is not None:
        w = np.zeros(n)
        w[model.feature_index] = model.weights
    else:
        w = np.asarray(model.weights, dtype=np.float64)
    if model.zero_based:
        if to == "rankkit":
            return w, 0.0
        raise UsageError(f"{model.source}: a model of 0-based data (index_base 0) cannot be converted to {to}: "
                         f"{TOOL[to]} numbers features from 1 (train on 1-based data)")
    return w, 0.0


# -- writing ----------------------------------------------------------------------------------------
def foreign_text(weights: np.ndarray, constant: float, to: str, n_documents: int = 0) -> str:
    """A model file of format `to` whose own predict program scores w.x + constant, with the
    weights written so that they read back exactly (%.17g; svm_rank: one support vector per
    nonzero weight, `w_j j:1`, since SVMlight keeps support vector values as floats but alphas as
    doubles)."""
    w = np.asarray(weights, dtype=np.float64)
    if not (np.all(np.isfinite(w)) and math.isfinite(constant)):
        raise ValueError("refusing to write a model with non-finite weights")
    if to == "liblinear":
        n = w.shape[0]
        bias = constant != 0.0
        lines = ["solver_type L2R_L2LOSS_RANKSVM", "nr_class 2", f"nr_feature {n}", f"bias {1 if bias else -1}", "w"]
        lines += ["%.17g " % v for v in w.tolist()]
        if bias:
            lines.append("%.17g " % constant)
        return "\n".join(lines) + "\n"
    if to == "svm_rank":
        nz = np.flatnonzero(w)
        lines = [
            "SVM-light Version V6.20",
            "0 # kernel type",
            "3 # kernel parameter -d ",
            "1 # kernel parameter -g ",
            "1 # kernel parameter -s ",
            "1 # kernel parameter -r ",
            "empty# kernel parameter -u ",
            f"{w.shape[0]} # highest feature index ",
            f"{n_documents} # number of training documents ",
            f"{nz.size + 1} # number of support vectors plus 1 ",
            "%.17g # threshold b, each following line is a SV (starting with alpha*y)" % (-constant + 0.0),
        ]
        lines += ["%.17g %d:1 #" % (w[j], j + 1) for j in nz.tolist()]
        return "\n".join(lines) + "\n"
    if to == "sofia-ml":
        return " ".join("%.17g" % v for v in [constant] + w.tolist()) + "\n"
    raise ValueError(f"unknown format {to!r}")


def holds_format(path: str) -> str | None:
    """The model format an existing file holds, judged from its first line, or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    first = head.split(b"\n", 1)[0]
    tokens = first.decode("ascii", "replace").split()
    if tokens and all(_NUMBER.match(t) for t in tokens):
        return "sofia-ml"
    return detect_format(head)
