"""One core under the faces: one training path and header builder (rankkit.training), stop codes
worded once (rankkit.solvers.options.stop_message), and the output guard shared by `rankkit train`
and `Ranker.save`."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import numpy as np
import pytest

import rankkit
from rankkit import training
from rankkit.errors import UsageError
from rankkit.io.model import read_model
from rankkit.solvers.base import FitResult
from rankkit.estimators import PYTHON_WORDS
from rankkit.solvers.options import stop_message

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.train.txt"


def _data():
    X, y, q = rankkit.load_svmlight_file(str(SAMPLE), query_id=True)
    return X, y, q


# -- save: the guard of `rankkit train` ----------------------------------------------------------------
def test_save_refuses_to_replace_a_data_file(tmp_path):
    X, y, q = _data()
    target = tmp_path / "train.txt"
    original = SAMPLE.read_bytes()
    target.write_bytes(original)
    ranker = rankkit.RankSVM(C=0.01).fit(X, y, qid=q)
    with pytest.raises(UsageError, match="holds LETOR/SVMlight data"):
        ranker.save(target)
    assert target.read_bytes() == original


def test_save_refuses_to_replace_a_file_that_is_not_a_model(tmp_path):
    X, y, q = _data()
    target = tmp_path / "notes.txt"
    target.write_text("my notes, not a model\n")
    with pytest.raises(UsageError, match="not a rankkit model file"):
        rankkit.RankSVM(C=0.01).fit(X, y, qid=q).save(target)
    assert target.read_text() == "my notes, not a model\n"


def test_save_replaces_a_model_and_writes_a_new_file(tmp_path):
    X, y, q = _data()
    target = tmp_path / "m.model"
    rankkit.RankSVM(C=0.01).fit(X, y, qid=q).save(target)
    first = read_model(str(target))
    rankkit.RankSVM(C=0.1).fit(X, y, qid=q).save(target)  # a model over a model: allowed
    assert float(read_model(str(target)).header["C"]) == 0.1 != float(first.header["C"])


# -- one header builder ------------------------------------------------------------------------------
def test_cli_and_python_write_the_same_header_but_for_the_file_facts(tmp_path):
    from rankkit.commands import train

    X, y, q = _data()
    cli_model = tmp_path / "cli.model"
    train(str(SAMPLE), str(cli_model), "newton", {"C": 0.01, "tol": None, "max_iter": None, "loss": None,
                                                 "query_norm": False})
    py_model = tmp_path / "py.model"
    rankkit.RankSVM(C=0.01).fit(X, y, qid=q).save(py_model)
    cli = read_model(str(cli_model))
    py = read_model(str(py_model))
    np.testing.assert_array_equal(cli.weights, py.weights)
    file_facts = {"index_base", "group_queries", "auc", "train_file", "train_file_bytes", "train_file_sha256",
                  "read_time_seconds"}
    volatile = {"created", "train_time_seconds"}
    cli_keys = [k for k in cli.header if k not in file_facts | volatile]
    py_keys = [k for k in py.header if k not in file_facts | volatile]
    assert cli_keys == py_keys
    assert all(cli.header[k] == py.header[k] for k in cli_keys)


def test_model_header_order():
    result = FitResult(w=np.zeros(2), objective=1.5, iterations=3, converged=True, message="", n_active=4,
                       stop="converged", detail={"ratio": 1e-9, "tol": 1e-6}, extra={"cg_iterations": 7})
    header = training.model_header("newton", "squared-hinge", {"C": 1.0}, {"n_features": 2},
                                   training.fit_outcome(result), {"parts": 2}, 0.25)
    assert list(header) == ["rankkit_version", "created", "solver", "loss", "C", "n_features", "objective",
                            "iterations", "converged", "stop_reason", "violated_pairs", "cg_iterations", "parts",
                            "train_time_seconds"]
    assert header["stop_reason"] == "Newton decrement / objective = 1e-09 < tol 1e-06"
    assert header["rankkit_version"] == rankkit.__version__


# -- stop codes, worded once ---------------------------------------------------------------------------
@pytest.mark.parametrize("stop, detail, cli, python", [
    ("converged", {"ratio": 1.234e-9, "tol": 1e-6}, "Newton decrement / objective = 1.23e-09 < tol 1e-06", None),
    ("zero_gradient", {}, "gradient is exactly zero", None),
    ("max_iter", {"max_iter": 7}, "stopped at --max-iter 7 before the stopping rule was met",
     "stopped at max_iter 7 before the stopping rule was met"),
    ("max_iter", {"max_iter": 7, "gap": 0.0123}, "stopped at --max-iter 7 with relative duality gap 0.0123",
     "stopped at max_iter 7 with relative duality gap 0.0123"),
    ("line_search", {}, "line search could not decrease the objective (numerical precision reached)", None),
    ("duality_gap", {"gap": 5e-5, "tol": 1e-4}, "relative duality gap 5e-05 <= tol 0.0001", None),
    ("iterations", {"iterations": 3}, "stopped at --iterations 3: ran out of iterations (no stopping rule was met)",
     "stopped at iterations 3: ran out of iterations (no stopping rule was met)"),
    ("early_stop", {"patience": 4, "best_map": 0.5, "best_iteration": 2},
     "early stopping: validation MAP did not improve for 4 iterations (--patience); kept the best validation MAP "
     "0.5000, at iteration 2",
     "early stopping: validation MAP did not improve for 4 iterations (patience); kept the best validation MAP "
     "0.5000, at iteration 2"),
    ("budget", {"iterations": 10}, "ran 10 stochastic steps (a fixed budget: no convergence test)", None),
    ("diverged", {"objective": 9.0, "iterations": 5, "start": 1.0, "remedy": "lambda"},
     "diverged: objective 9 after 5 steps is above 1 at the start (the step size is too large for this data: use a "
     "larger --lambda, or --eta basic with a smaller --eta0)",
     "diverged: objective 9 after 5 steps is above 1 at the start (the step size is too large for this data: use a "
     "larger alpha, or eta basic with a smaller eta0)"),
    ("diverged", {"objective": 9.0, "iterations": 5, "start": 1.0, "remedy": "lower_C"},
     "diverged: objective 9 after 5 steps is above 1 at the start (the step size is too large for this data: "
     "lower -C)",
     "diverged: objective 9 after 5 steps is above 1 at the start (the step size is too large for this data: "
     "lower C)"),
])
def test_stop_codes_are_worded_for_each_face(stop, detail, cli, python):
    assert stop_message(stop, detail) == cli
    assert stop_message(stop, detail, PYTHON_WORDS) == (python or cli)


def test_every_owned_solver_sets_a_stop_code_that_words_its_message():
    from rankkit.solvers.bundle import BundleRankSVM
    from rankkit.solvers.factorized import FactorizedRankSVM
    from rankkit.solvers.sgd import PegasosRankSVM, QuerySgdRankSVM
    from rankkit.io.svmlight import read_svmlight

    ds = read_svmlight(str(SAMPLE))
    for solver in (BundleRankSVM(C=0.1, max_iter=3), BundleRankSVM(C=0.1), FactorizedRankSVM(K=2, iterations=3),
                   PegasosRankSVM(iterations=100), QuerySgdRankSVM(C=0.01, iterations=50)):
        result = solver.fit(ds)
        assert result.stop, type(solver).__name__
        assert result.message == stop_message(result.stop, result.detail)


def test_python_warning_names_python_parameters_and_points_at_the_caller():
    X, y, q = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ranker = rankkit.RankSVM(C=0.1, loss="hinge", max_iter=2).fit(X, y, qid=q)
    found = [w for w in caught if issubclass(w.category, rankkit.ConvergenceWarning)]
    assert len(found) == 1
    assert str(found[0].message).startswith("stopped at max_iter 2 with relative duality gap")
    assert found[0].filename == __file__
    assert ranker.stop_reason_.startswith("stopped at max_iter 2 ")  # the estimator's words are Python's (issue 24)
    assert ranker.model_.header["stop_reason"].startswith("stopped at --max-iter 2 ")  # the model records the CLI's


# -- imports ----------------------------------------------------------------------------------------
MINE = ["rankkit/commands.py", "rankkit/distributed/commands.py", *(f"rankkit/estimators/{m}.py" for m in (
    "__init__", "base", "validation", "words", "ranksvm", "sgd", "factorized", "load", "protocol")), "rankkit/training.py",
        "rankkit/selection.py", "rankkit/report.py", "rankkit/solvers/options.py", "rankkit/solvers/base.py"]


@pytest.mark.parametrize("path", MINE)
def test_no_private_names_of_other_modules_and_no_version_from_the_package(path):
    tree = ast.parse((ROOT / path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rankkit"):
            names = [a.name for a in node.names]
            assert not [n for n in names if n.startswith("_") and n != "__version__"], (path, node.module, names)
            if node.module == "rankkit":
                assert "__version__" not in names, path


def test_commands_and_distributed_commands_do_not_import_each_other_both_ways():
    tree = ast.parse((ROOT / "rankkit/distributed/commands.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "rankkit.commands" not in modules
