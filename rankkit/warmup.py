"""Compile rankkit's kernels before the first real run.

    rankkit warmup [--jobs N] [--jit] [-q]        (the same as python -m rankkit.warmup)

On a terminal a progress line counts the seconds; elsewhere (cron, a log) only the summary line is
written, and with -q nothing but an error. Exit 0 when the kernels are cached; 2, with one line,
when they cannot be (no writable cache: set NUMBA_CACHE_DIR).

A fresh install compiles its kernels on the first run of each command (10-30 s). `make` runs this
once after installing, so that `make demo` and a user's first `rankkit train` find machine code.
By default it compiles the kernel calls of every command (every solver, loss and sampler, predict,
eval, path, the Dask worker path: run_exercises) and of the Python API's fits ahead of time
(rankkit.compiler.build), in `--jobs` processes, into the kernel cache: runs then never import
numba or load LLVM. If that cannot be done
here (no C compiler, numba without its AOT compiler), or with --jit, it runs those commands on a
small generated data set instead (train, predict, eval and Pegasos; with --all also a grid path),
in `--jobs` processes at once, so that numba's JIT compiles them into its on-disk cache (numba's
cache takes concurrent writers). Either way it writes into whatever NUMBA_CACHE_DIR says, as a
real run would, and nothing else.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import rankkit
from rankkit import threads
from rankkit.compiler import build, dispatch
from rankkit.io import svmlight


def _write_sample(path: str, queries: int, docs: int, features: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(features)
    with open(path, "w") as fh:
        for q in range(1, queries + 1):
            X = np.round(rng.random((docs, features)), 6)
            y = np.digitize(X @ w + 0.5 * rng.standard_normal(docs), [-0.5, 0.5, 1.5])
            for label, row in zip(y, X):
                feats = " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(row) if v != 0)
                fh.write(f"{label} qid:{q} {feats}\n")


def write_exercise_data(tmp: str) -> None:
    _write_sample(os.path.join(tmp, "train.txt"), 30, 20, 8, 0)
    _write_sample(os.path.join(tmp, "vali.txt"), 10, 20, 8, 1)


def _rankkit(*args: str) -> None:
    # imported here: the ahead-of-time build needs numpy and numba only (make demo starts it while
    # pip is still installing click and scipy: tests/test_first_run.py)
    from rankkit.cli import cli

    with open(os.devnull, "w") as devnull:
        real = sys.stdout
        sys.stdout = devnull
        try:
            cli.main(args=list(args), prog_name="rankkit", standalone_mode=False)
        finally:
            sys.stdout = real


def exercise(name: str, tmp: str, threads: str | None = None) -> None:
    """One of the common commands on the files of write_exercise_data (--threads if given)."""
    train, vali = os.path.join(tmp, "train.txt"), os.path.join(tmp, "vali.txt")
    model, scores = os.path.join(tmp, f"{name}.model"), os.path.join(tmp, f"{name}.scores")
    t = ("--threads", threads) if threads else ()
    if name == "newton":
        _rankkit("train", train, model, "-C", "0.01", *t)
        _rankkit("predict", vali, model, scores, *t)
        _rankkit("eval", vali, scores)
    elif name == "pegasos":
        _rankkit("train", train, model, "--solver", "pegasos", "--iterations", "1000", *t)
    elif name == "path":
        _rankkit("path", train, vali, *t)
    elif name == "api":
        _python_api(train, vali, threads)


def _python_api(train: str, vali: str, threads: str | None = None) -> None:
    """The Python API's common calls (rankkit.RankSVM, SGDRanker, evaluate on scipy matrices, whose
    column indices are int32 where `rankkit train` reads uint16 ones)."""
    n = int(threads) if threads else None
    X, y, q = rankkit.load_svmlight_file(train, query_id=True)
    Xv, yv, qv = rankkit.load_svmlight_file(vali, query_id=True, n_features=X.shape[1])
    ranker = rankkit.RankSVM(C=0.01, n_jobs=n).fit(X, y, qid=q)
    rankkit.evaluate(yv, ranker.predict(Xv), qid=qv, convention="exp")  # labels 0-3: graded as 2^label - 1
    rankkit.SGDRanker(learner="pegasos", iterations=1000, n_jobs=n).fit(X, y, qid=q).predict(Xv)


EXERCISES = ("newton", "pegasos", "api")  # `path` too with --all: it compiles for minutes under load
ALL = EXERCISES + ("path",)


def _write_raw(path: str, n_queries: int, docs: int, seed: int, qid: bool = True) -> None:
    """Features on raw scales (counts, BM25-like values, fractions: a spread of 1e6), as MSLR's."""
    scale = np.array([3e4, 1, 1e-2, 30, 1e3, 1, 5, 1e2])
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        for q in range(n_queries):
            for _ in range(docs):
                x = rng.gamma(0.7, 1.0, 8) * scale
                label = int(rng.integers(0, 3)) if qid else int(rng.random() < 0.3)
                fh.write(f"{label} " + (f"qid:{q + 1} " if qid else "")
                         + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)) + "\n")


def exercise_raw_features(tmp: str) -> None:
    """The preconditioned Newton CG (rankkit.solvers.newton: the Hessian's diagonal, the dense
    Hessian) on raw-scaled features: the commands, the API, and both preconditioners on every column
    index type and loss, one and two threads, whole and chunked products."""
    from rankkit.io.svmlight import read_svmlight
    from rankkit.objectives.pairwise import PairwiseObjective
    from rankkit.solvers.newton import LocalObjective, truncated_newton

    files = [os.path.join(tmp, n) for n in ("raw-small.txt", "raw-big.txt", "raw-one.txt")]
    _write_raw(files[0], 5, 20, 0)
    _write_raw(files[1], 60, 100, 1)
    _write_raw(files[2], 1, 6000, 2, qid=False)
    for f in files:
        for t in ("1", "2"):
            _rankkit("train", f, f + ".model", "-C", "1", "--threads", t)
            _rankkit("train", f, f + ".model", "-C", "1", "--threads", t, "--loss", "huber")
        _python_api(f, f, "2")
        ds = read_svmlight(f)
        for view in (ds, ds.with_changes(indices=ds.indices.astype(np.int32)),
                     ds.with_changes(indices=ds.indices.astype(np.uint16))):
            for mode in ("diag", "dense"):
                for loss in ("squared-hinge", "huber"):
                    truncated_newton(LocalObjective(PairwiseObjective(view, 1.0, loss), view), precondition=mode,
                                     max_iter=3)
    saved = threads.MIN_WORK_PER_THREAD
    threads.MIN_WORK_PER_THREAD = 1
    try:
        for f in files[:2]:
            _rankkit("train", f, f + ".model", "-C", "1", "--threads", "2")
    finally:
        threads.MIN_WORK_PER_THREAD = saved


def run_exercises(tmp: str) -> None:
    """Everything the ahead-of-time build must cover, on small generated files: the common commands
    and the Python API's fits (whole-buffer reader), every solver, loss and sampler, the path
    methods, TREC evaluation and the Dask worker path (exercise_solvers); an eval of two systems
    (significance tests); train and predict (and the API's fits) on files large enough for the
    chunked products (4096 rows and more): 60 queries of 100 documents, and one query of 6000
    documents with binary labels and no qid; then the common commands again with the streamed,
    threaded reader forced."""
    write_exercise_data(tmp)
    big = os.path.join(tmp, "big.txt")
    _write_sample(big, 60, 100, 8, 2)
    one = os.path.join(tmp, "one.txt")
    rng = np.random.default_rng(3)
    with open(one, "w") as fh:
        for _ in range(6000):
            x = np.round(rng.random(8), 6)
            fh.write(f"{int(x[0] + x[1] > 1)} " + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(x)) + "\n")
    for name in ALL:
        exercise(name, tmp)
    exercise_solvers(tmp)
    exercise_raw_features(tmp)
    vali = os.path.join(tmp, "vali.txt")  # two systems compared: the significance tests
    pegasos = os.path.join(tmp, "pegasos")
    _rankkit("predict", vali, pegasos + ".model", pegasos + ".scores")
    _rankkit("eval", vali, os.path.join(tmp, "newton.scores"), pegasos + ".scores")
    for f in (big, one):
        for t in ("1", "2"):
            _rankkit("train", f, f + ".model", "-C", "1", "--threads", t)
            _rankkit("predict", f, f + ".model", f + ".scores", "--threads", t)
        _python_api(f, f, t)  # the API's fits on int32 column indices, chunked products
    # one wide, very sparse query (text-like: 3 of 3,000 features a row), whose X'z goes through
    # the objective's few-chunk product (squared_hinge.xt_product), with decimal-coded values
    # (`:.3f`) and with full doubles, uint16 column indices (train) and int32 ones (the API)
    for digits in (".3f", ".17g"):
        wide = os.path.join(tmp, f"wide{digits[1:-1]}.txt")
        with open(wide, "w") as fh:
            for _ in range(4500):
                cols = np.sort(rng.choice(3000, 3, replace=False))
                vals = rng.random(3)
                fh.write(f"{int(vals[0] > 0.5)} " + " ".join(f"{j + 1}:{v:{digits}}" for j, v in zip(cols, vals)) + "\n")
        for t in ("1", "2"):
            _rankkit("train", wide, wide + ".model", "-C", "0.01", "--threads", t)
        X, y, _ = rankkit.load_svmlight_file(wide, query_id=True)
        for t in (1, 2):
            rankkit.RankSVM(C=0.01, n_jobs=t).fit(X, y, group=[X.shape[0]])
    # more than 65,536 columns in use (text-like vocabularies): int32 column indices even after the
    # Newton solver's compaction, with decimal-coded values, through train (Newton, Pegasos) and predict
    huge = os.path.join(tmp, "huge.txt")
    with open(huge, "w") as fh:
        for r in range(4500):  # (4,096 rows and more: the chunked products too)
            cols = r * 16 + np.arange(1, 17)
            vals = rng.random(16)
            fh.write(f"{r % 3} qid:{r // 50 + 1} " + " ".join(f"{j}:{v:.3f}" for j, v in zip(cols, vals)) + "\n")
    for args in (("-C", "0.01", "--threads", "1"), ("-C", "0.01", "--threads", "2"),
                 ("--solver", "pegasos", "--iterations", "2000")):
        _rankkit("train", huge, huge + ".model", *args)
        _rankkit("predict", huge, huge + ".model", huge + ".scores", "--threads", "2")
    saved = (svmlight.STREAM_MIN_BYTES, svmlight.STREAM_BLOCK_BYTES, svmlight.PARALLEL_MIN_BYTES,
             threads.MIN_WORK_PER_THREAD)
    svmlight.STREAM_MIN_BYTES, svmlight.STREAM_BLOCK_BYTES, svmlight.PARALLEL_MIN_BYTES = 1, 1 << 12, 1
    threads.MIN_WORK_PER_THREAD = 1
    try:
        for name in ALL:
            exercise(name, tmp, threads="2")
    finally:
        (svmlight.STREAM_MIN_BYTES, svmlight.STREAM_BLOCK_BYTES, svmlight.PARALLEL_MIN_BYTES,
         threads.MIN_WORK_PER_THREAD) = saved


def record_calls(tmp: str) -> set:
    """The kernel calls from Python that run_exercises makes (what the build compiles)."""
    dispatch.start_recording()
    try:
        run_exercises(tmp)
    finally:
        calls = dispatch.stop_recording()
    return calls


# every solver with every loss it offers (the Newton solvers' other losses, the bundle method,
# the factorized and the stochastic solvers with each sampler), -v with a validation file (the
# metrics at checkpoints), --auc, --query-weights, --rescale, --query-norm and a kernel map
SOLVER_RUNS = (
    ("--loss", "huber", "-C", "0.1"),
    ("--loss", "logistic", "-C", "0.1"),
    ("--query-norm", "-C", "0.1"),
    ("--solver", "newton-pairs", "-C", "0.1"),
    ("--solver", "newton-pairs", "--loss", "huber", "-C", "0.1"),
    ("--solver", "newton-pairs", "--loss", "logistic", "-C", "0.1"),
    ("--solver", "newton-pairs", "--rescale", "margin", "-C", "0.1"),
    ("--solver", "newton-pairs", "--rescale", "slack", "-C", "0.1"),
    ("--rescale", "margin", "-C", "0.1"),  # the paper's: a sweep per pair of labels (issue 26)
    ("--rescale", "margin-delta", "-C", "0.1"),
    ("--rescale", "slack", "-C", "0.1"),  # and its violated pairs (count_active)
    ("--solver", "nlcg", "-C", "0.1"),
    ("--solver", "bundle", "-C", "0.1"),
    ("--solver", "factorized", "-K", "2", "--iterations", "5"),
    ("--solver", "factorized", "--loss", "squared-hinge", "-K", "2", "--iterations", "5"),
    ("--solver", "sgd", "--iterations", "300"),
    ("--solver", "pegasos", "--iterations", "300", "--sampler", "indexed"),
    ("--solver", "pegasos", "--iterations", "300", "--sampler", "query-norm"),
    ("--solver", "pegasos", "--iterations", "300", "--batch-size", "4", "--eta", "basic"),
    ("--solver", "pa", "--iterations", "300"),
    ("--solver", "romma", "--iterations", "300"),
    ("--solver", "logreg", "--iterations", "300", "--eta", "constant"),
    ("--solver", "margin-perceptron", "--iterations", "300"),
    ("--solver", "perceptron", "--iterations", "300", "--eta", "basic", "--eta-c", "5"),
    ("--solver", "pegasos", "--iterations", "300", "--sampler", "sofia", "--ties"),
    ("--solver", "pair-sgd", "--iterations", "300"),
    ("--solver", "pair-sgd", "--iterations", "300", "--t0", "0"),
    ("--solver", "query-sgd", "--iterations", "300"),
    ("--solver", "pegasos", "--iterations", "300", "--sampler", "stream"),
    ("--kernel", "rbf", "--landmarks", "20", "-C", "0.1"),
)


def exercise_solvers(tmp: str) -> None:
    """Every solver, loss and sampler `rankkit train` offers, on the small files (and their
    -v/--valid, --auc and --query-weights forms), the path methods, TREC-format evaluation and
    the Dask worker path (an in-process cluster, so that its calls are this process's)."""
    train, vali = os.path.join(tmp, "train.txt"), os.path.join(tmp, "vali.txt")
    model = os.path.join(tmp, "solver.model")
    for args in SOLVER_RUNS:
        _rankkit("train", train, model, *args)
    _rankkit("train", train, model, "--solver", "pegasos", "--iterations", "300", "--valid", vali, "-v")
    _rankkit("train", train, model, "--solver", "factorized", "-K", "2", "--iterations", "5", "--valid", vali)
    one = os.path.join(tmp, "one.txt")
    if os.path.exists(one):
        for args in (("-C", "0.01"), ("--solver", "pegasos", "--iterations", "300", "--sampler", "roc"),
                     ("--solver", "bundle", "-C", "0.01")):
            _rankkit("train", one, model, "--auc", *args)
    weights = os.path.join(tmp, "weights.txt")
    with open(weights, "w") as fh:
        fh.write("".join(f"{q} {1 + q % 3}\n" for q in range(1, 31)))
    _rankkit("train", train, model, "--query-weights", weights, "-C", "0.1")
    _rankkit("path", train, vali, "--n-points", "4")
    _rankkit("path", train, vali, "--method", "exact", "--max-events", "30")
    # TREC runs and qrels
    qrels, run = os.path.join(tmp, "qrels.txt"), os.path.join(tmp, "run.txt")
    rng = np.random.default_rng(4)
    with open(qrels, "w") as fq, open(run, "w") as fr:
        for q in range(1, 6):
            for d in range(12):
                fq.write(f"{q} 0 d{d} {int(rng.integers(0, 3))}\n")
                fr.write(f"{q} Q0 d{d} {d + 1} {float(rng.random()):.6f} r\n")
        fr.write(f"5 Q0 d12 13 0.1234567890123456789012345678901234567890 r\n")  # a long literal: the exact cast
    _rankkit("eval", "--qrels", qrels, run)
    _rankkit("eval", "--qrels", qrels, run, run, "--per-query")
    for fmt in ("trec", "ranked"):  # TREC runs and ranked lists written by predict (ties ordered by docid)
        _rankkit("predict", vali, model, os.path.join(tmp, f"solver.{fmt}"), "--format", fmt)
    _dask_worker_path(tmp)


def _dask_worker_path(tmp: str) -> None:
    """train, predict and eval on two parts through an in-process Dask cluster (the workers' kernel
    calls are those of worker processes; here they are recorded). Nothing if dask is absent."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        return
    from rankkit.distributed import commands as dist

    parts = [os.path.join(tmp, "train.txt"), os.path.join(tmp, "part2.txt")]
    with open(os.path.join(tmp, "vali.txt")) as src, open(parts[1], "w") as dst:  # other qids: whole queries per part
        for line in src:
            label, qid, rest = line.split(" ", 2)
            dst.write(f"{label} qid:{int(qid[4:]) + 1000} {rest}")
    model, scores = os.path.join(tmp, "dask.model"), os.path.join(tmp, "dask.scores")
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                      silence_logs=50) as cluster, Client(cluster) as client:
        quiet = lambda *a, **k: None  # noqa: E731
        dist.train_parts(parts, model, dask=client, params={"C": 0.1}, warn=quiet)
        dist.predict_parts(parts, model, out_file=scores, dask=client)
        dist.eval_parts(parts, scores, dask=client, echo=quiet)
    dist.train_parts(parts, model, params={"C": 0.1}, warn=lambda *a, **k: None)  # several files, no Dask


def _worker(names: list[str], tmp: str) -> str | None:
    """Run the exercises `names`; None if what they compiled is in the disk cache, else why not."""
    from rankkit.compiler import jit

    jit.quiet_compiles()  # warmup says what it does; a cache it cannot fill is reported by main
    for name in names:
        exercise(name, tmp)
    return jit.cache_problem()


def compile_bytecode() -> bool:
    """Write rankkit's own bytecode (__pycache__) now: an editable install does not, and a run
    that compiles its modules from source spends ~0.05 s on it. False if the folder is read-only
    (nothing else happens: Python then compiles in memory on each run, as before)."""
    import compileall

    return bool(compileall.compile_dir(os.path.dirname(os.path.abspath(__file__)), quiet=2))


def warm(jobs: int = 1, exercises=EXERCISES) -> tuple[float, str | None]:
    """Write rankkit's bytecode and run the exercises (in `jobs` processes); returns the wall seconds
    and None, or why what they compiled is not all in the disk cache (a full disk, ...)."""
    t = time.perf_counter()
    problems = []
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="rankkit-warmup-") as tmp:
        write_exercise_data(tmp)
        jobs = max(1, min(jobs, len(exercises)))
        if jobs == 1:
            problems.append(_worker(list(exercises), tmp))
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            groups = [list(exercises[i::jobs]) for i in range(jobs)]
            from rankkit.processes import die_with_parent

            with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                     initializer=die_with_parent) as pool:
                problems.extend(pool.map(_worker, groups, [tmp] * jobs))
    return time.perf_counter() - t, next((p for p in problems if p), None)


def first_commands(tmp: str) -> None:
    """The demo's first commands (`make demo`: train -v, predict, eval) on the small files of
    write_exercise_data: the calls `python -m rankkit.warmup --first` builds (table.FIRST)."""
    train, vali = os.path.join(tmp, "train.txt"), os.path.join(tmp, "vali.txt")
    model, scores = os.path.join(tmp, "first.model"), os.path.join(tmp, "first.scores")
    with open(os.devnull, "w") as devnull:
        real = sys.stderr
        sys.stderr = devnull  # -v's log
        try:
            _rankkit("train", train, model, "-C", "0.01", "-v")
        finally:
            sys.stderr = real
    _rankkit("predict", vali, model, scores)
    _rankkit("eval", vali, scores)


def record(path: str = build.TABLE_PATH) -> int:
    """Rewrite the table of calls compiled ahead of time from what the common commands call
    (developers, after changing a kernel's arguments), and the demo's first calls among them
    (first_commands); returns the number of calls."""
    with tempfile.TemporaryDirectory(prefix="rankkit-record-") as tmp:
        calls = build.buildable(record_calls(tmp))
    with tempfile.TemporaryDirectory(prefix="rankkit-record-") as tmp:
        write_exercise_data(tmp)
        dispatch.start_recording()
        try:
            first_commands(tmp)
        finally:
            first = dispatch.stop_recording()
    build.write_table(calls, path, first=[c for c in calls if c in first])
    return len(calls)


def build_ahead(jobs: int = 1, progress=None, calls: list | None = None, add: bool = True) -> tuple[float, int]:
    """Compile the common kernel calls (or `calls`) ahead of time (and write rankkit's bytecode);
    returns the wall seconds and the number of calls compiled. add: only those a build of these
    sources here lacks (rankkit.compiler.build.build). Raises if it cannot be done here. progress:
    as rankkit.compiler.build.build's."""
    t = time.perf_counter()
    compile_bytecode()
    manifest = build.build(jobs, calls=calls, progress=progress, add=add)
    return time.perf_counter() - t, manifest.get("added", sum(len(r["kernels"]) for r in manifest["modules"].values()))


class _Progress:
    """On a terminal, one line that counts the seconds of a long step ("... 12 s of about 30 s"),
    rewritten in place; elsewhere (cron, make's log, CI) nothing, so a log gets only the summary.
    A step that reports its parts (update: the ahead-of-time build's compiled calls and finished
    modules) shows them too, with the time left estimated from the pace so far:
    "... 31 of 83 kernel calls, 12 s, about 20 s left"."""

    # the share of a module's build time that comes after its last call is compiled (LLVM's
    # whole-module optimization and machine code, numba's C helpers, the link): measured 2026-11-28
    MACHINE_CODE_SHARE = 0.25

    def __init__(self, what: str, about: float | None, show: bool):
        self.what, self.about, self.show = what, about, show
        self._stop = None
        self.parts = None  # (calls compiled, modules finished, calls, modules) once reported
        self.share = None  # the calls' compile work done, by their costs (rankkit.compiler.build)

    def update(self, done: int, modules_done: int, total: int, modules: int, share: float | None = None) -> None:
        self.parts = (done, modules_done, total, modules)
        self.share = share

    def fraction(self) -> float | None:
        """The share of the work done, from the parts reported (None before any)."""
        if self.parts is None:
            return None
        done, modules_done, total, modules = self.parts
        if total <= 0 or modules <= 0:
            return None
        compiled = min(done, total) / total if self.share is None else min(max(self.share, 0.0), 1.0)
        share = self.MACHINE_CODE_SHARE
        return (1.0 - share) * compiled + share * min(modules_done, modules) / modules

    def __enter__(self):
        if not self.show:
            return self
        import threading

        self._t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _line(self) -> str:
        s = time.perf_counter() - self._t0
        return self.line(s)

    def line(self, s: float) -> str:
        """The progress line `s` seconds into the step."""
        f = self.fraction()
        if self.parts is None or f is None:
            about = f" of about {self.about:.0f} s" if self.about and s < self.about else ""
            return f"rankkit: {self.what}: {s:.0f} s{about}"
        done, modules_done, total, modules = self.parts
        what = f"{done} of {total} kernel calls" if done < total else f"machine code, {modules_done} of {modules} modules"
        if f > 0.02 and s >= 2.0:  # the pace so far (the first calls wait for numba to start)
            left = s * (1.0 - f) / f
        elif self.about:
            left = max(self.about - s, 0.0)
        else:
            left = None
        about = f", about {left:.0f} s left" if left is not None and f < 1.0 else ""
        return f"rankkit: {self.what}: {what}, {s:.0f} s{about}"

    def _run(self):
        while not self._stop.wait(0.5):
            self._write("\r\033[K" + self._line())

    def _write(self, text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            self.show = False

    def __exit__(self, *exc):
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
            self._write("\r\033[K")
        return False


def _terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (OSError, ValueError):
        return False


def main(argv=None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C: the temporary files are gone (finally blocks); one line, no traceback
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second one (to the process and its group) while exiting
        print("rankkit: warmup interrupted; nothing was installed", file=sys.stderr)
        return 130


_PROG = "python -m rankkit.warmup"  # or `rankkit warmup`: how the user started it, for advice


def _not_cached(problem: str) -> int:
    """A cache that could not be filled (a full disk, a quota, no writable directory): one line and
    exit status 2, so that `make` does not mark the step done; runs would compile on every start."""
    print(f"rankkit: error: {problem}: the kernels were not cached (free some space, or set NUMBA_CACHE_DIR "
          f"to a writable directory, and run `{_PROG}` again)", file=sys.stderr)
    return 2


def _main(argv=None) -> int:
    prog = "python -m rankkit.warmup"
    if argv is None and sys.argv[1:3] and sys.argv[1] == "--prog":  # `rankkit warmup` (rankkit.cli) names itself
        prog, argv = sys.argv[2], sys.argv[3:]
    global _PROG
    _PROG = prog
    ap = argparse.ArgumentParser(prog=prog, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=None, help="processes compiling at once [default: the usable cores]")
    ap.add_argument("--all", action="store_true", help="also `rankkit path` (a few more minutes of compiling)")
    ap.add_argument("--jit", action="store_true", help="numba's JIT cache only, no ahead-of-time compiling")
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="no summary line (errors are still one line on stderr); a progress line is shown only on a terminal")
    ap.add_argument("--force", action="store_true",
                    help="build again even if the kernels of these sources are already compiled ahead of time here")
    ap.add_argument("--first", action="store_true",
                    help="only the kernel calls of the demo's first commands (train, predict, eval; make demo "
                    "runs them, then the whole build, which adds the rest)")
    ap.add_argument("--record", action="store_true",
                    help="developers: rewrite rankkit/compiler/table.py from the common commands' kernel calls")
    a = ap.parse_args(argv)
    if a.record:
        n = record()
        print(f"rankkit: {n} kernel calls written to {build.TABLE_PATH}", file=sys.stderr)
        return 0
    import signal

    # SIGTERM ends the run as Ctrl-C does: through the finally blocks that remove the temporary files
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    jobs = a.jobs if a.jobs is not None else threads.usable_cores()
    processes = f"{jobs} process{'es' if jobs > 1 else ''}"
    progress = not a.quiet and _terminal()
    wanted = build.first_table() if a.first else build.table()
    if not a.jit and not a.force:
        from rankkit.compiler import aot

        done = aot.status()
        if done["dir"] is not None and aot.covers(wanted):
            if not a.quiet:
                what = "the demo's first kernels are" if a.first else "the kernels are"
                print(f"rankkit: {what} already compiled ahead of time for this rankkit, in {done['dir']} "
                      "(--force builds them again)", file=sys.stderr)
            compile_bytecode()
            return 0
    if not a.jit:
        try:
            with _Progress(f"compiling kernels ahead of time ({processes})", build.estimated_seconds(jobs, wanted),
                           progress) as shown:
                seconds, n = build_ahead(jobs, shown.update, calls=wanted, add=not a.force)
        except Exception as exc:  # no C compiler, no numba.pycc, ...: the JIT cache instead
            if build.disk_error(exc):  # the JIT cache would go to the same place: nothing can be cached
                where = str(exc.filename or "its directory")
                if os.path.basename(where).startswith(".build-"):  # the build's staging folder: name the cache
                    where = os.path.dirname(where)
                return _not_cached(f"cannot write the kernel cache in {where} ({exc.strerror})")
            print(f"rankkit: cannot compile kernels ahead of time here ({exc.__class__.__name__}: "
                  f"{str(exc).splitlines()[0] if str(exc) else ''}); using numba's JIT cache", file=sys.stderr)
        else:
            if not a.quiet:
                first = f" (the demo's first commands; `{prog}` compiles the other {len(build.table()) - len(wanted)})" \
                    if a.first else ""
                print(f"rankkit: {n} kernel calls compiled in {seconds:.1f} s{first}", file=sys.stderr)
            return 0
    with _Progress(f"compiling kernels into the cache ({processes})", None, progress):
        seconds, problem = warm(jobs, ALL if a.all else EXERCISES)
    if problem is not None:
        return _not_cached(problem)
    if not a.quiet:
        print(f"rankkit: kernels compiled and cached in {seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
