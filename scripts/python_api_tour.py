"""A tour of rankkit's Python API on the bundled sample, cell by cell (`# %%` cells: open it in
VS Code or Jupyter as a notebook, or run it as a script). `make demo` runs it, and so does the
test suite (tests/test_api.py), so every line here works as shown.

    python scripts/python_api_tour.py [--out DIR]
"""

# %% Imports. `import rankkit` is instant; numpy/scipy load with the first call, numba with the first fit.
import argparse
import os
import tempfile
import warnings

import numpy as np

import rankkit

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--out", default=None, help="directory for the model file (default: a temporary one)")
parser.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
args = parser.parse_args()
out_dir = args.out or tempfile.mkdtemp(prefix="rankkit-tour-")

# %% Load the data: a drop-in for sklearn.datasets.load_svmlight_file (X as CSR, y, and qid).
X, y, qid = rankkit.load_svmlight_file(os.path.join(args.data, "sample.train.txt"), query_id=True)
Xv, yv, qv = rankkit.load_svmlight_file(os.path.join(args.data, "sample.vali.txt"), query_id=True,
                                        n_features=X.shape[1])
Xt, yt, qt = rankkit.load_svmlight_file(os.path.join(args.data, "sample.test.txt"), query_id=True,
                                        n_features=X.shape[1])
print(f"train: {X.shape[0]} documents, {len(np.unique(qid))} queries, {X.shape[1]} features")

# %% Fit a RankSVM (primal Newton, squared hinge) and evaluate it on the test queries, graded as trec_eval
# (and pytrec_eval, ranx, scikit-learn's ndcg_score) grades them; convention="letor4" gives the LETOR script's.
ranker = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)
print(f"newton: {ranker.n_iter_} iterations, objective {ranker.objective_:.6g}, converged {ranker.converged_}")
print("test:", rankkit.evaluate(yt, ranker.predict(Xt), qid=qt, metrics=("ndcg@5", "ndcg@10", "map")))

# %% Choose C on the validation queries along the regularisation path (what `rankkit path` does).
path = rankkit.regularization_path(X, y, Xv, yv, qid=qid, qid_valid=qv, method="grid", n_points=8)
for C, m in zip(path.C, path.valid_metric):
    print(f"  C {C:10.4g}  valid ndcg@10 {m:.4f}{'  <- chosen' if C == path.best_C else ''}")
print(f"chosen C {path.best_C:.4g} (regularization_path)")

# %% The same choice by scikit-learn's GridSearchCV over queries (if scikit-learn is installed).
try:
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold
except ImportError:
    print("scikit-learn is not installed: skipping the GridSearchCV cell")
else:
    with config_context(enable_metadata_routing=True):  # qid reaches fit and score
        search = GridSearchCV(rankkit.RankSVM().set_fit_request(qid=True).set_score_request(qid=True),
                              {"C": [1e-3, 1e-2, 1e-1]}, cv=GroupKFold(n_splits=3))
        search.fit(X, y, groups=qid, qid=qid)
    print(f"chosen C {search.best_params_['C']:g} (GridSearchCV, mean ndcg@10 {search.best_score_:.4f})")

# %% A stochastic learner (Pegasos, as sofia-ml) against the Newton model: a paired randomization test.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", rankkit.ConvergenceWarning)
    pegasos = rankkit.SGDRanker(learner="pegasos", alpha=1e-3, iterations=20000, random_state=1).fit(X, y, qid=qid)
for system in rankkit.compare(yt, {"newton": ranker.predict(Xt), "pegasos": pegasos.predict(Xt)}, qid=qt,
                              metrics=("ndcg@10",)):
    p = system.get("p_value", {}).get("ndcg@10")
    print(f"  {system['name']:8s} ndcg@10 {system['mean']['ndcg@10']:.4f}" + ("" if p is None else f"  p {p:.3f}"))

# %% The whole LETOR protocol (what `rankkit experiment` does): per fold, each solver's grid chosen on vali by
# the first metric, the choice scored on test, a paired test against the first solver over all test queries.
# Here two folds made of the sample's files; give a LETOR directory (Fold1..FoldK) for a real one.
files = [os.path.join(args.data, f"sample.{part}.txt") for part in ("train", "vali", "test")]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", rankkit.ConvergenceWarning)
    results = rankkit.experiment([files, [files[0], files[2], files[1]]], solvers=("newton", "pegasos"),
                                 metrics=("map", "ndcg@10"), n_points=6, iterations=20000,
                                 grids={"pegasos": {"lambda": [1e-2, 1e-3, 1e-4]}})
for s in results["solvers"]:
    chosen = ", ".join(f"{f['fold']} {f['chosen']}" for f in s["folds"])
    p = s.get("p_value", {}).get("map")
    print(f"  {s['name']:8s} mean test map {s['mean']['test']['map']:.4f}" + ("" if p is None else f"  p {p:.3f}")
          + f"  ({chosen})")

# %% Save the chosen model: the same file `rankkit train` writes; `rankkit predict` scores it identically.
best = path.best_estimator_
model_path = os.path.join(out_dir, "tour.model")
best.save(model_path)
again = rankkit.load_model(model_path)
assert np.array_equal(again.predict(Xt), best.predict(Xt))
print(f"wrote {model_path}; try: .venv/bin/rankkit predict data/sample.test.txt {model_path}")
