"""Scores of documents under a model: rankkit's linear, sparse and kernel models, and the models of
svm_rank, liblinear and sofia-ml exactly as their own predict programs compute them. Used by the
command line's predict and by the Python estimators' predict, so both give the same scores bit for bit.
"""

from __future__ import annotations

import numpy as np

from rankkit.feature_maps import kernel_scores, make_kernel
from rankkit.io.foreign_models import ForeignModel
from rankkit.sparse import csr_matvec, ignored_entries


def model_scores(model, ds) -> tuple[np.ndarray, int]:
    """Scores of ds under the model (linear, or beta' k(x) for a kernel model; a foreign model as
    its tool's predict program computes them), and how many feature values lie beyond the model's
    features (ignored)."""
    ignored = int(ignored_entries(ds.indices, model.n_features))
    if isinstance(model, ForeignModel):
        return foreign_scores(model, ds), ignored
    if model.landmarks is not None:
        name, gamma, degree, coef0 = model.kernel_args()  # read_model checked them: a ModelError names the model
        k = make_kernel(name, model.n_features, gamma, degree, coef0)
        return kernel_scores(k, model.landmarks, model.weights, ds.csr()), ignored
    if model.feature_index is not None:  # sparse model: data columns -> positions in its sorted feature list
        m = model.feature_index.shape[0]
        pos = np.searchsorted(model.feature_index, ds.indices)
        hit = pos < m
        hit[hit] = model.feature_index[pos[hit]] == ds.indices[hit]
        cols = np.where(hit, pos, m).astype(np.int32)  # m: not a model feature, csr_matvec skips it (weight 0)
        scores = csr_matvec(ds.data, cols, ds.indptr, model.weights, np.empty(ds.n_rows))
        return scores, ignored
    scores = csr_matvec(ds.data, ds.indices, ds.indptr, model.weights, np.empty(ds.n_rows))
    return scores, ignored


def foreign_scores(model, ds) -> np.ndarray:
    """Each document's score exactly as the tool's own predict program computes it (see
    rankkit.io.foreign_models): the same roundings, the same order of the sums."""
    if model.format == "sofia-ml":  # C floats throughout: acc = w_0 * 1, then += w_j * x_j in feature order
        w32 = model.weights.astype(np.float32)
        x32 = ds.data.astype(np.float32)
        d = w32.shape[0]
        acc = np.full(ds.n_rows, np.float32(model.constant), dtype=np.float32)
        lengths = np.diff(ds.indptr)
        for k in range(int(lengths.max()) if lengths.size else 0):
            rows = np.flatnonzero(lengths > k)
            t = ds.indptr[rows] + k
            j = ds.indices[t]
            keep = j < d  # beyond the model: undefined in sofia-ml, weight 0 here
            rows, t, j = rows[keep], t[keep], j[keep]
            acc[rows] = acc[rows] + w32[j] * x32[t]
        return acc.astype(np.float64)
    data = ds.data
    if model.format == "svm_rank":  # SVMlight stores a document's values as C floats
        data = data.astype(np.float32).astype(np.float64)
    scores = csr_matvec(data, ds.indices, ds.indptr, model.weights, np.empty(ds.n_rows))
    if model.format == "liblinear":
        if model.bias >= 0:  # predict appends feature nr_feature + 1 = bias; summed last
            scores = scores + model.bias_weight * model.bias
        return scores
    return scores + model.constant  # svm_rank: w.x - b
