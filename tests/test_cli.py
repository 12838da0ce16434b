"""The `rankkit` command, run for real in a subprocess: exit statuses, one-line errors, atomic model
files, end to end on the bundled sample."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rankkit import __version__
from rankkit.io.model import read_model
from rankkit.io.svmlight import read_svmlight
from tests.reference import RTOL_KERNEL

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_TRAIN = ROOT / "data" / "sample.train.txt"
SAMPLE_TEST = ROOT / "data" / "sample.test.txt"
METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map"]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env.pop("RANKKIT_DEBUG", None)  # tracebacks only on request: never in these tests
    return env


def rankkit(*args, cwd, stdin: bytes | None = None, max_file_size: int | None = None) -> subprocess.CompletedProcess:
    """Run `python -m rankkit ARGS` in `cwd`; stdout and stderr are bytes. With max_file_size, any
    write that makes a file larger fails (EFBIG: Python ignores SIGXFSZ), as on a full disk."""
    if max_file_size is None:
        cmd = [sys.executable, "-m", "rankkit"]
    else:  # the same as -m rankkit, after lowering the limit (no preexec_fn: unsafe with threads)
        cmd = [
            sys.executable,
            "-c",
            f"import resource, runpy; resource.setrlimit(resource.RLIMIT_FSIZE, ({max_file_size}, {max_file_size})); "
            "runpy.run_module('rankkit', run_name='__main__', alter_sys=True)",
        ]
    return subprocess.run(
        [*cmd, *map(str, args)],
        cwd=cwd,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=_env(),
        timeout=300,
    )


def write_files(directory: Path, files: dict) -> None:
    for name, content in files.items():
        (directory / name).write_bytes(content if isinstance(content, bytes) else content.encode())


def assert_one_line_error(proc, *fragments) -> str:
    """Exit status 2, nothing on stdout, exactly one line on stderr containing every fragment."""
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert proc.returncode == 2, (proc.returncode, err)
    assert proc.stdout == b""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("rankkit: error: "), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


# A model written by hand (no training run needed): 3 features, 1-based. MODEL is format 1 (no
# checksum, as rankkit 0.1 wrote), MODEL2 the same weights in format 2 (checksummed).
MODEL = "rankkit-model 1\nsolver newton\nindex_base 1\nn_features 3\nweights 3\n0.5\n0.25\n-1\n"
_BODY2 = MODEL.replace("model 1", "model 2")
MODEL2 = _BODY2 + f"checksum sha256 {hashlib.sha256(_BODY2.encode()).hexdigest()}\n"
GOOD = "2 qid:1 1:1 2:0.5\n1 qid:1 1:0.5 3:1\n0 qid:1 2:1\n1 qid:2 1:1\n0 qid:2 3:1\n"
# The issue's example: line 1834 of train.txt.
ISSUE_TRAIN = "".join(f"{i % 3} qid:{i // 10} 1:0.5 2:1\n" for i in range(1833)) + "1 qid:999 abc:1 2:1\n"


def _bad_train(line: str) -> dict:
    """A training file whose 3rd line (after a comment) is `line`."""
    return {"train.txt": "2 qid:1 1:1 2:0.5\n# comment\n" + line + "\n0 qid:1 2:1\n"}


TRAIN = ["train", "train.txt", "m.txt"]
PREDICT = ["predict", "test.txt", "m.txt"]
EVAL = ["eval", "test.txt", "s.txt"]
L3 = "train.txt:3: "

# (id, files, command line, fragments expected on the single stderr line)
BAD_INPUT = [
    ("label-not-a-number", _bad_train("high qid:1 1:1"), TRAIN, [L3, "'high'", "not a number"]),
    ("value-not-a-number", _bad_train("1 qid:1 1:0.5x"), TRAIN, [L3, "'0.5x'", "not a number"]),
    ("value-NULL", _bad_train("1 qid:1 1:0.5 2:NULL"), TRAIN, [L3, "'NULL'", "missing value"]),
    ("value-nan", _bad_train("1 qid:1 1:nan"), TRAIN, [L3, "'nan'", "not finite"]),
    ("value-inf", _bad_train("1 qid:1 1:-inf"), TRAIN, [L3, "'-inf'", "not finite"]),
    ("value-overflow", _bad_train("1 qid:1 1:1e999"), TRAIN, [L3, "'1e999'", "not finite"]),
    ("label-nan", _bad_train("NaN qid:1 1:1"), TRAIN, [L3, "'NaN'", "not finite"]),
    ("index-zero", _bad_train("1 qid:1 0:1 2:1"), TRAIN, [L3, "'0'", "1-based"]),
    ("index-decreasing", _bad_train("1 qid:1 3:1 2:1"), TRAIN, [L3, "'2'", "previous index 3"]),
    ("index-repeated", _bad_train("1 qid:1 2:1 2:1"), TRAIN, [L3, "'2'", "previous index 2"]),
    ("missing-colon", _bad_train("1 qid:1 1:1 0.75"), TRAIN, [L3, "'0.75'", "missing ':'"]),
    ("qid-not-integer", _bad_train("1 qid:q7 1:1"), TRAIN, [L3, "'q7'", "not an integer"]),
    ("qid-too-large", _bad_train("1 qid:99999999999999999999 1:1"), TRAIN, [L3, "too large"]),
    ("qid-reappears", {"train.txt": GOOD + "2 qid:1 1:1\n"}, TRAIN, ["train.txt:6: ", "qid 1 appears again"]),
    ("qid-mixed", {"train.txt": GOOD + "2 1:1\n"}, TRAIN, ["train.txt:6: ", "no qid"]),
    ("empty-file", {"train.txt": ""}, TRAIN, ["train.txt: is empty"]),
    ("comments-only", {"train.txt": "# nothing\n\n"}, TRAIN, ["train.txt: has no data lines"]),
    ("no-pairs", {"train.txt": "1 qid:1 1:1\n1 qid:1 2:1\n0 qid:2 1:1\n"}, TRAIN, ["train.txt: no preference pairs"]),
    ("no-such-file", {}, TRAIN, ["train.txt: no such file"]),
    ("directory", {}, ["train", ".", "m.txt"], [".: is a directory"]),
    ("corrupt-gzip", {"t.gz": gzip.compress(GOOD.encode())[:-9]}, ["train", "t.gz", "m.txt"], ["t.gz: truncated gzip data"]),
    ("model-dir-missing", {"train.txt": GOOD}, ["train", "train.txt", "no/m.txt"], ["cannot write 'no/m.txt'"]),
    ("predict-NULL", {"test.txt": "qid:1 1:1\nqid:1 1:NULL\n", "m.txt": MODEL}, PREDICT, ["test.txt:2: ", "'NULL'"]),
    ("model-is-data", {"test.txt": GOOD, "m.txt": GOOD}, PREDICT, ["m.txt:1: ", "not a rankkit model file"]),
    ("model-empty", {"test.txt": GOOD, "m.txt": ""}, PREDICT, ["m.txt: is empty", "not a rankkit model"]),
    ("model-truncated", {"test.txt": GOOD, "m.txt": MODEL[:-3]}, PREDICT, ["m.txt: expected 3 weights", "found 2"]),
    ("model-cut-in-header", {"test.txt": GOOD, "m.txt": MODEL[:30]}, PREDICT, ["m.txt: truncated model file"]),
    ("model-newer", {"test.txt": GOOD, "m.txt": MODEL.replace("model 1", "model 99")}, PREDICT, ["m.txt:1: ", "newer"]),
    ("model-bad-weight", {"test.txt": GOOD, "m.txt": MODEL.replace("0.25", "0,25")}, PREDICT, ["m.txt:7: ", "'0,25'"]),
    ("model-missing", {"test.txt": GOOD}, PREDICT, ["m.txt: no such model file"]),
    ("scores-bad", {"test.txt": GOOD, "s.txt": "1\nabc\n3\n4\n5\n"}, EVAL, ["s.txt:2: ", "'abc'"]),
    ("scores-count", {"test.txt": GOOD, "s.txt": "1\n2\n"}, EVAL, ["s.txt: has 2 scores", "5 documents"]),
    ("metric-unknown", {"test.txt": GOOD, "s.txt": "1\n2\n3\n4\n5\n"}, [*EVAL, "-m", "ndcg@x"], ["'ndcg@x'"]),
]


@pytest.mark.parametrize("files,args,fragments", [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(tmp_path, files, args, fragments):
    write_files(tmp_path, files)
    before = sorted(os.listdir(tmp_path))
    assert_one_line_error(rankkit(*args, cwd=tmp_path), *fragments)
    assert sorted(os.listdir(tmp_path)) == before  # no model, no temp file


def test_the_issue_example_verbatim(tmp_path):
    write_files(tmp_path, {"train.txt": ISSUE_TRAIN})
    proc = rankkit("train", "train.txt", "m.txt", cwd=tmp_path)
    assert_one_line_error(proc)
    assert proc.stderr == b"rankkit: error: train.txt:1834: feature index 'abc' is not an integer\n"


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--no-such-option", "a", "b"],
        ["train", "a.txt"],  # missing MODEL
        ["predict"],
        ["train", "--solver", "nope", "a", "b"],
        ["train", "-C", "0", "a", "b"],
        ["frobnicate"],
    ],
    ids=["unknown-option", "missing-argument", "no-arguments", "bad-choice", "bad-range", "unknown-command"],
)
def test_usage_errors_exit_2(tmp_path, args):
    proc = rankkit(*args, cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err and err.startswith("rankkit: error: ") and err.count("\n") == 1, err
    assert os.listdir(tmp_path) == []


def test_help_version_and_light_import(tmp_path):
    proc = rankkit("--help", cwd=tmp_path)
    assert proc.returncode == 0 and b"train" in proc.stdout and b"predict" in proc.stdout
    proc = rankkit("--version", cwd=tmp_path)
    assert proc.returncode == 0 and __version__.encode() in proc.stdout
    check = "import rankkit.cli, sys; assert 'numba' not in sys.modules and 'numpy' not in sys.modules"
    proc = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True, env=_env())
    assert proc.returncode == 0, proc.stderr.decode()


# -- prediction details ---------------------------------------------------------------------------
def test_predict_ignores_and_counts_extra_features(tmp_path):
    write_files(tmp_path, {"m.txt": MODEL2, "test.txt": "1 qid:1 1:2 2:4 3:1 7:1\n0 qid:1 2:1 5:1 6:2\nqid:2 1:1\n"})
    proc = rankkit("predict", "-v", "test.txt", "m.txt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ["1", "0.25", "0.5"]  # 2*0.5 + 4*0.25 - 1, 0.25, 0.5
    assert "ignored 3 feature values" in proc.stderr.decode()


def test_predict_group_queries_keeps_input_order(tmp_path):
    data = "1 qid:1 1:1\n0 qid:2 2:1\n1 qid:1 3:1\n0 qid:2 1:4 9:1\n"  # qid 1 comes back
    write_files(tmp_path, {"m.txt": MODEL2, "test.txt": data})
    proc = rankkit("predict", "--group-queries", "test.txt", "m.txt", "out.txt", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""  # extra feature: silent without -v
    assert (tmp_path / "out.txt").read_text() == "0.5\n0.25\n-1\n2\n"


def test_predict_with_a_format_1_model_says_it_cannot_be_verified(tmp_path):
    write_files(tmp_path, {"m.txt": MODEL, "test.txt": "1 qid:1 1:2 2:4 3:1\n"})
    proc = rankkit("predict", "test.txt", "m.txt", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == b"1\n"
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("rankkit: warning: m.txt is a format-1 model") and "checksum" in err


# -- atomic model files ---------------------------------------------------------------------------
def test_failed_train_keeps_old_model_and_success_replaces_it(tmp_path):
    old = b"rankkit-model 1\nsolver newton\nweights 1\n0.125\n"
    write_files(tmp_path, {"m.txt": old, "bad.txt": GOOD + "1 qid:3 1:NULL\n", "good.txt": GOOD})
    assert_one_line_error(rankkit("train", "bad.txt", "m.txt", cwd=tmp_path), "bad.txt:6: ")
    assert (tmp_path / "m.txt").read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "good.txt", "m.txt"]
    proc = rankkit("train", "good.txt", "m.txt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "good.txt", "m.txt"]
    assert read_model(str(tmp_path / "m.txt")).n_features == 3


@pytest.mark.skipif(sys.platform == "win32", reason="needs resource.setrlimit")
def test_write_failing_midway_keeps_old_model(tmp_path):
    """The model cannot be written completely (file size limit, like a full disk): the old model
    must stay as it was, byte for byte, and no temporary file may be left behind."""
    old = b"rankkit-model 1\nsolver newton\nweights 1\n0.125\n"
    write_files(tmp_path, {"m.txt": old, "good.txt": GOOD})
    proc = rankkit("train", "good.txt", "m.txt", cwd=tmp_path, max_file_size=256)
    assert_one_line_error(proc, "cannot write 'm.txt'")
    assert (tmp_path / "m.txt").read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["good.txt", "m.txt"]


# -- end to end on the bundled sample -------------------------------------------------------------
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e")
    proc = rankkit("train", SAMPLE_TRAIN, "model.txt", cwd=d)
    assert proc.returncode == 0, proc.stderr.decode()
    return d


def test_predict_file_stdout_and_stdin_agree_and_round_trip(trained):
    to_file = rankkit("predict", SAMPLE_TEST, "model.txt", "scores.txt", cwd=trained)
    assert to_file.returncode == 0 and to_file.stdout == b"", to_file.stderr.decode()
    out = (trained / "scores.txt").read_bytes()
    to_stdout = rankkit("predict", SAMPLE_TEST, "model.txt", cwd=trained)
    assert to_stdout.returncode == 0 and to_stdout.stdout == out
    from_stdin = rankkit("predict", "-", "model.txt", cwd=trained, stdin=SAMPLE_TEST.read_bytes())
    assert from_stdin.returncode == 0 and from_stdin.stdout == out
    lines = out.decode().split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    n_data_lines = sum(1 for ln in SAMPLE_TEST.read_text().splitlines() if ln.split("#")[0].strip())
    assert len(lines) == n_data_lines
    assert all("%.17g" % float(s) == s for s in lines)  # full precision: every value round-trips
    # one score per input line, in input order: compare with X w computed here
    model = read_model(str(trained / "model.txt"))
    ds = read_svmlight(str(SAMPLE_TEST))
    expected = ds.csr(model.n_features) @ model.weights
    np.testing.assert_allclose(np.array([float(s) for s in lines]), expected, rtol=RTOL_KERNEL, atol=RTOL_KERNEL)


def test_eval_table_and_json(trained):
    scores = trained / "eval_scores.txt"
    proc = rankkit("predict", SAMPLE_TEST, "model.txt", scores, cwd=trained)
    assert proc.returncode == 0
    js = rankkit("eval", SAMPLE_TEST, scores, "--format", "json", cwd=trained)
    assert js.returncode == 0, js.stderr.decode()
    values = json.loads(js.stdout)
    assert list(values) == METRICS
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in values.values())
    table = rankkit("eval", SAMPLE_TEST, scores, cwd=trained)
    assert table.returncode == 0, table.stderr.decode()
    lines = [ln.split() for ln in table.stdout.decode().splitlines() if not ln.startswith("#")]
    assert lines[0] == ["metric", str(scores)]  # header row: the SCORES file names the column
    rows = {cells[0]: cells[1] for cells in lines[1:]}
    assert rows == {k: f"{v:.6f}" for k, v in values.items()}
    assert "convention trec" in table.stdout.decode()  # the default, named in the output


def test_training_is_reproducible(trained):
    proc = rankkit("train", SAMPLE_TRAIN, "model2.txt", cwd=trained)
    assert proc.returncode == 0, proc.stderr.decode()
    volatile = ("created ", "read_time_seconds ", "train_time_seconds ", "checksum ")

    def stable(name):
        lines = (trained / name).read_text().splitlines()
        return [ln for ln in lines if not ln.startswith(volatile)], len(lines)

    (a, na), (b, nb) = stable("model.txt"), stable("model2.txt")
    assert a == b and na == nb
    assert a[0] == "rankkit-model 2"
    assert (trained / "model.txt").read_text().splitlines()[-1].startswith("checksum sha256 ")


def test_query_weights_file(tmp_path):
    qids = sorted({ln.split()[1][4:] for ln in SAMPLE_TRAIN.read_text().splitlines()}, key=int)
    (tmp_path / "w.txt").write_text("# weights\n" + "".join(f"{q} 1.5\n" for q in qids))
    ok = rankkit("train", SAMPLE_TRAIN, "m.txt", "--query-weights", "w.txt", "--loss", "huber", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    assert "query_weights_file w.txt" in (tmp_path / "m.txt").read_text()
    (tmp_path / "short.txt").write_text(f"{qids[0]} 1\n")
    missing = rankkit("train", SAMPLE_TRAIN, "m.txt", "--query-weights", "short.txt", cwd=tmp_path)
    assert missing.returncode == 2 and f"has no weight for qid {qids[1]}" in missing.stderr.decode()
    (tmp_path / "bad.txt").write_text(f"{qids[0]} 1\n{qids[1]} heavy\n")
    bad = rankkit("train", SAMPLE_TRAIN, "m.txt", "--query-weights", "bad.txt", cwd=tmp_path)
    assert bad.returncode == 2 and "bad.txt:2: weight 'heavy' is not a number" in bad.stderr.decode()


def test_auc_training_reports_the_training_auc(tmp_path):
    """--auc: the whole file is one query with binary labels; the model records the training AUC,
    which equals the AUC of the model's own scores (counted pair by pair here)."""
    lines = SAMPLE_TRAIN.read_text().splitlines()
    binary = [("1" if ln.split()[0] != "0" else "0") + ln[ln.index(" ") :] for ln in lines]
    (tmp_path / "bin.txt").write_text("\n".join(binary) + "\n")
    ok = rankkit("train", "bin.txt", "m.txt", "--auc", "-C", "0.001", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    header = dict(ln.split(" ", 1) for ln in (tmp_path / "m.txt").read_text().split("\nweights")[0].splitlines()[1:])
    assert header["n_queries"] == "1" and header["auc"] == "true"
    pred = rankkit("predict", "bin.txt", "m.txt", cwd=tmp_path)
    scores = [float(v) for v in pred.stdout.split()]
    labels = [int(ln.split()[0]) for ln in binary]
    pos = [s for s, lab in zip(scores, labels) if lab == 1]
    neg = [s for s, lab in zip(scores, labels) if lab == 0]
    auc = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    assert float(header["train_auc"]) == pytest.approx(auc, abs=1e-12)
    graded = rankkit("train", SAMPLE_TRAIN, "g.txt", "--auc", cwd=tmp_path)
    assert graded.returncode == 2 and "--auc needs binary labels; found 3 distinct labels" in graded.stderr.decode()


@pytest.mark.parametrize("args, message", [
    (["--gamma", "0.5"], "--gamma applies only with --kernel poly or rbf"),
    (["--landmarks", "10"], "--landmarks applies only with --kernel"),
    (["--degree", "3"], "--degree applies only with --kernel poly"),  # given, even at its default value
    (["--kernel", "rbf", "--coef0", "1"], "--coef0 applies only with --kernel poly, not --kernel rbf"),
    (["--patience", "3"], "--patience applies only with --valid"),
    (["--delta", "gain"], "--delta applies only with --rescale"),
])
def test_an_option_that_does_not_apply_is_refused_by_one_rule(tmp_path, args, message):
    """Issue 25: --gamma without --kernel, --patience without --valid (which the model even
    recorded) were ignored silently while -C with pegasos was refused: one rule (options.DEPENDS)."""
    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", *args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.decode() == f"rankkit: error: {message}\n", proc.stderr
    assert not (tmp_path / "m.txt").exists()


def test_the_same_rule_in_python():
    import rankkit as rk
    from rankkit.errors import UsageError

    X, y, q = rk.load_svmlight_file(str(SAMPLE_TRAIN), query_id=True)
    for est, message in [(rk.RankSVM(gamma=0.5), "gamma applies only with kernel='poly' or 'rbf'"),
                         (rk.RankSVM(kernel="rbf", degree=2), "degree applies only with kernel='poly', not kernel='rbf'"),
                         (rk.RankSVM(delta="gain"), "delta applies only with rescale"),
                         (rk.SGDRanker(patience=2), "patience applies only with eval_set")]:
        with pytest.raises(UsageError, match=re.escape(message)):
            est.fit(X, y, qid=q)


def test_options_of_the_paired_test_and_of_trec_output_apply_only_where_they_are_used(tmp_path):
    """The operator trial: `predict --tag` without `--format trec` and `eval --test/--permutations/
    --seed` with one SCORES file were silently ignored; the one rule refuses them."""
    write_files(tmp_path, {"good.txt": GOOD})
    assert rankkit("train", "good.txt", "m.txt", cwd=tmp_path).returncode == 0
    assert rankkit("predict", "good.txt", "m.txt", "s.txt", cwd=tmp_path).returncode == 0
    assert_one_line_error(rankkit("predict", "good.txt", "m.txt", "--tag", "x", cwd=tmp_path),
                          "--tag applies only with --format trec, not --format scores")
    for extra in (["--test", "t"], ["--permutations", "1000"], ["--seed", "3"]):
        assert_one_line_error(rankkit("eval", "good.txt", "s.txt", *extra, cwd=tmp_path),
                              f"{extra[0]} applies only with two or more SCORES files")
    assert_one_line_error(rankkit("eval", "good.txt", "s.txt", "s.txt", "--test", "t", "--permutations", "1000",
                                  cwd=tmp_path), "--permutations applies only with --test randomization, not --test t")
    assert rankkit("eval", "good.txt", "s.txt", "s.txt", "--permutations", "1000", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("value", ["0", "abc", "-1"])
def test_numba_num_threads_that_numba_cannot_take_is_one_line(tmp_path, value):
    """NUMBA_NUM_THREADS=0 was an internal error from numba, =abc numba's traceback with exit 0."""
    write_files(tmp_path, {"good.txt": GOOD})
    env = dict(_env(), NUMBA_NUM_THREADS=value)
    proc = subprocess.run([sys.executable, "-m", "rankkit", "train", "good.txt", "m.txt"], cwd=tmp_path, env=env,
                          capture_output=True, timeout=120)
    assert_one_line_error(proc, f"NUMBA_NUM_THREADS={value!r} is not a whole number of threads")
    assert not (tmp_path / "m.txt").exists()
