"""`rankkit convert`: a model as another tool's model file (or back), scoring the same."""

from __future__ import annotations

import os
import sys
from typing import Callable

import numpy as np

from rankkit import console
from rankkit.config import __version__
from rankkit.errors import UsageError
from rankkit.io.atomic import atomic_open, check_output
from rankkit.io.foreign_models import TOOL, ForeignModel, foreign_text, holds_format, linear_view, load_model
from rankkit.io.model import Model, write_model
from rankkit.io.svmlight import display_name

Log = Callable[[str], None] | None


def convert(in_file, out_file, to, model_format=None, log: Log = None) -> None:
    """Write the model IN_FILE (rankkit or foreign, detected or `model_format`) as a `to` model file
    whose own predict program gives the same scores. Linear models only, into a foreign format."""
    if to == "rankkit":
        check_output(out_file, (in_file,), kind="model")
    else:
        check_output(out_file, (in_file,), kind="file")
        if out_file != "-" and os.path.isfile(out_file) and os.path.getsize(out_file) > 0:
            holds = holds_format(out_file)
            if holds != to:
                raise UsageError(f"refusing to replace '{out_file}': it is not a {TOOL[to]} model file "
                                 "(remove it first to reuse the name)")
    model = load_model(in_file, model_format)
    source = display_name(in_file)
    if to == "rankkit" and not isinstance(model, ForeignModel):
        write_model(out_file, model)  # a rankkit model as it is, its feature names too (format 1 becomes format 2)
        if log:
            log(f"wrote {out_file}: the rankkit model {source} unchanged")
        return
    w, constant = linear_view(model, to)
    names = getattr(model, "feature_names", None)
    if names is not None:  # svm_rank's, liblinear's and sofia-ml's model files have no place for them
        console.note(f"{source}: the model's {len(names)} feature names are not kept: a {TOOL[to]} model file "
                     "has no place for them (its features are numbers, as in the data files it scores)")
    src_format = model.format if isinstance(model, ForeignModel) else "rankkit"
    if to == "rankkit":
        header = {"rankkit_version": __version__, "solver": "converted", "source_format": src_format,
                  "source_file": source}
        header.update({f"source_{k}": v for k, v in model.info.items()})
        header.update({"index_base": 1, "n_features": int(w.shape[0])})
        if constant != 0.0:
            header["source_constant"] = float(constant)
            console.warn(f"{source}: the {src_format} model adds the constant {constant!r} to every score "
                         f"({_constant_name(src_format)}); a rankkit model has no constant term, so rankkit scores "
                         "differ from its scores by that constant (rankings are unchanged)")
        write_model(out_file, Model(weights=np.array(w, dtype=np.float64), header=header))
    else:
        n_docs = model.info.get("training_documents", 0) if isinstance(model, ForeignModel) else \
            model.header.get("n_documents", "0")
        n_docs = int(n_docs) if str(n_docs).isascii() and str(n_docs).isdigit() else 0  # svm_rank's header line 9
        text = foreign_text(w, constant, to, n_documents=n_docs)
        if out_file == "-":
            sys.stdout.flush()
        with atomic_open(out_file, binary=True) as fh:
            fh.write(text.encode("ascii"))
    if log:
        log(f"wrote {out_file}: the {src_format} model {source} as a {to} model ({w.shape[0]} features)")


def _constant_name(fmt: str) -> str:
    return {"liblinear": "bias weight x bias", "sofia-ml": "the weight of the bias feature 0",
            "svm_rank": "minus the threshold b"}.get(fmt, "")
