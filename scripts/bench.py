#!/usr/bin/env python3
"""rankkit benchmarks (`make bench`). Prints a Markdown report and writes it to out/bench.md.

Sections:
  1. parse     rankkit's reader vs scikit-learn's load_svmlight_file on the same files, same run
  2. cli       wall time of `rankkit` commands as a user runs them (subprocess): --help, cold
               (fresh numba cache: compiling) and warm train on the bundled sample, MQ2008 Fold1,
               and the liblinear-ranksvm-sized files (reading included)
  3. eval      `rankkit eval` wall time on a 10-million-line file and its scores
     eval-peers `rankkit eval --qrels --convention trec` against pytrec_eval and ranx on one TREC run
               (--eval-lines, 10 million by default), same metrics, values checked equal
  5. fig3/fig1 Chapelle & Keerthi's Fig. 3 (PRSVM vs PRSVM+ against n) and Fig. 1 (C on MQ2008)
  6. threads   fit time with 1 and 2 threads
  4. scaling   Newton training time vs n on one query with binary labels (n^2/4-ish implicit
               pairs), with the least-squares exponent of time ~ n^a

Timings are the best of `--repeat` runs. Inputs are generated under bench-data/ (git-ignored)
by scripts/make_synthetic.py; ../shared/data is used when present.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
BENCH = ROOT / "bench-data"
sys.path.insert(0, str(ROOT / "scripts"))

import make_synthetic  # noqa: E402


def best_of(fn, repeat):
    times = []
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(open("/proc/meminfo").readline().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    import numba
    import scipy

    return (
        f"{cpu}, {os.cpu_count()} cores{mem}; Python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, numba {numba.__version__}; {platform.system()} {platform.release()}"
    )


def ensure(path: Path, make) -> Path:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        make(str(tmp))
        tmp.rename(path)
    return path


def run(cmd, env=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def rankkit_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "rankkit", *args]


# -- 1. parse ----------------------------------------------------------------------------------
def bench_parse(report, repeat):
    from rankkit.io.svmlight import read_svmlight

    try:
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        load_svmlight_file = None
    files = []
    if (SHARED / "MQ2008" / "Fold1" / "train.txt").exists():
        files.append(("MQ2008 Fold1 train.txt", SHARED / "MQ2008" / "Fold1" / "train.txt"))
    files.append(
        ("synthetic mixed-format (parse)", ensure(BENCH / "parse200.txt", lambda p: make_synthetic.write_parse(p, mb=200)))
    )
    files.append(("synthetic LETOR 200k x 46 (letor)", ensure(BENCH / "letor.txt", make_synthetic.write_letor)))
    read_svmlight(str(files[0][1]))  # load the kernels once
    report.append("## Parse: rankkit vs scikit-learn `load_svmlight_file` (same run)\n")
    report.append("| file | MB | rankkit s | rankkit MB/s | scikit-learn s | speed-up |")
    report.append("|---|---:|---:|---:|---:|---:|")
    for name, path in files:
        mb = path.stat().st_size / 1e6
        t_rk, ds = best_of(lambda: read_svmlight(str(path)), repeat)
        if load_svmlight_file is not None:
            t_sk, (X, y, q) = best_of(lambda: load_svmlight_file(str(path), query_id=True), repeat)
            assert X.shape[0] == ds.n_rows and np.array_equal(y, ds.y)
            sk = f"{t_sk:.3f} | {t_sk / t_rk:.2f}x"
        else:
            sk = "(scikit-learn not installed) | -"
        report.append(f"| {name} | {mb:.1f} | {t_rk:.3f} | {mb / t_rk:.0f} | {sk} |")
    report.append("")
    _parse_passes(report, files, repeat)


def _parse_passes(report, files, repeat):
    """The reader's two passes one at a time, on one thread, in CPU seconds of that thread (what a
    busy machine changes least): the counting pass (rows and non-zeros) and the parsing pass, over
    each file's first 40 MB."""
    from rankkit.io import parse as K

    report.append("The reader's two passes on one thread (CPU ms of the thread, best of "
                  f"{max(repeat, 5)}; the first 40 MB of each file, cut at a line end):\n")
    report.append("| file | count pass ms | MB/s | parse pass ms | MB/s |")
    report.append("|---|---:|---:|---:|---:|")
    for name, path in files:
        buf = np.fromfile(path, dtype=np.uint8, count=40_000_000)
        buf = buf[: int(np.flatnonzero(buf == 10)[-1]) + 1]
        buf.flags.writeable = False
        rows, nnz, newlines = K._count_fast(buf, 0, buf.shape[0], False)
        out = (np.empty(nnz), np.empty(nnz, np.int32), np.zeros(rows + 1, np.int64), np.empty(rows),
               np.empty(rows, np.int64), np.empty(rows, np.uint8), np.empty(rows, np.int64), np.empty((rows, 2), np.int64),
               np.empty((rows + nnz, 4), np.int64), np.zeros((1, 5), np.int64), np.zeros((1, 3), np.int64))
        bounds = np.array([0, buf.shape[0]], dtype=np.int64)
        counts = np.array([[rows, nnz, newlines]], dtype=np.int64)
        zero = np.zeros(1, dtype=np.int64)

        def count():
            K._count_range(buf, bounds, False, np.zeros((1, 3), np.int64), 0, 1)

        def parse():
            K._parse_range(buf, bounds, False, False, counts, zero, zero, zero, zero, *out, 0, 1)

        best = {}
        for _ in range(max(repeat, 5)):
            for what, fn in (("count", count), ("parse", parse)):
                t = time.thread_time()
                fn()
                best[what] = min(best.get(what, 1e9), time.thread_time() - t)
        mb = buf.shape[0] / 1e6
        report.append(f"| {name} | {best['count'] * 1e3:.1f} | {mb / best['count']:.0f} | {best['parse'] * 1e3:.1f} | "
                      f"{mb / best['parse']:.0f} |")
    report.append("")


# -- 2. CLI ------------------------------------------------------------------------------------
def bench_cli(report, repeat):
    out = Path(tempfile.mkdtemp(prefix="rankkit-bench-"))
    sample = ROOT / "data" / "sample.train.txt"
    report.append("## Command-line wall times (subprocess, reading and writing included)\n")
    report.append("| command | seconds |")
    report.append("|---|---:|")
    t_help, _ = best_of(lambda: run(rankkit_cmd("--help")), repeat)
    report.append(f"| `rankkit --help` | {t_help:.3f} |")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = run(rankkit_cmd("train", str(sample), str(out / "m"), "-C", "0.01"), env=env)
        warm, _ = best_of(lambda: run(rankkit_cmd("train", str(sample), str(out / "m"), "-C", "0.01"), env=env), repeat)
    report.append(f"| `rankkit train` bundled sample, cold (fresh numba cache: compiles) | {cold:.2f} |")
    report.append(f"| `rankkit train` bundled sample, warm (cached kernels) | {warm:.3f} |")
    mq = SHARED / "MQ2008" / "Fold1" / "train.txt"
    if mq.exists():
        t, _ = best_of(lambda: run(rankkit_cmd("train", str(mq), str(out / "m"), "-C", "0.001")), repeat)
        report.append(f"| `rankkit train` MQ2008 Fold1 (9,630 docs), C=1e-3, warm | {t:.3f} |")
    letor = ensure(BENCH / "letor.txt", make_synthetic.write_letor)
    binary = ensure(BENCH / "binary.txt", make_synthetic.write_binary)
    for path, what, ref in [
        (letor, "200,000 docs, 2,000 queries x 100, 46 dense features, 5 levels", "1.7 s on a 91 MB file"),
        (binary, "1,000,000 docs, one query, binary labels, 17 features", "4.4 s on a 197 MB file"),
    ]:
        mb = path.stat().st_size / 1e6
        for C in ("1", "0.001"):
            t, _ = best_of(lambda: run(rankkit_cmd("train", str(path), str(out / "m"), "-C", C)), repeat)
            report.append(
                f"| `rankkit train` {path.name} ({mb:.0f} MB: {what}), C={C} (liblinear-ranksvm, published: {ref}) | {t:.2f} |"
            )
    report.append("")


# -- eval on a 10-million-line file -----------------------------------------------------------
def bench_eval(report, repeat):
    data = ensure(BENCH / "eval10m.txt", lambda p: make_synthetic.write_letor(p, queries=100_000, docs=100, features=1, levels=3))
    scores = BENCH / "eval10m.scores"
    if not scores.exists():
        from rankkit.io.output import write_scores

        rng = np.random.default_rng(0)
        write_scores(str(scores), rng.standard_normal(10_000_000))
    metrics = ["-m", "ndcg@10", "-m", "map", "-m", "err@10", "-m", "auc"]
    t, _ = best_of(lambda: run(rankkit_cmd("eval", str(data), str(scores), *metrics)), repeat)
    report.append("## `rankkit eval` on 10 million lines\n")
    report.append(
        f"`rankkit eval` of a {data.stat().st_size / 1e6:.0f} MB LETOR file (100,000 queries x 100 documents) "
        f"and a {scores.stat().st_size / 1e6:.0f} MB score file, metrics ndcg@10 map err@10 auc: **{t:.2f} s** "
        "wall (reading both files included).\n"
    )


# -- eval against pytrec_eval and ranx on one large TREC run ------------------------------------
def _write_trec_run_and_qrels(run_path: Path, qrels_path: Path, lines: int, docs: int = 1000, seed: int = 0) -> None:
    """lines // docs queries of `docs` retrieved documents: scores (a permutation of 1..docs)/1024,
    distinct within a query and exact in float32 (pytrec_eval keeps 32-bit scores); qrels judge
    every 5th retrieved document and 10 documents not retrieved, labels 0-3, at least one >= 1."""
    rng = np.random.default_rng(seed)
    queries = lines // docs
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(queries):
            perm = (rng.permutation(docs) + 1).tolist()
            run.write("".join(f"{q} Q0 D{q}-{j} 0 {perm[j] / 1024!r} bench\n" for j in range(docs)))
            labels = rng.integers(0, 4, docs // 5 + 10)
            labels[0] = max(labels[0], 1)
            judged = [f"D{q}-{j}" for j in range(0, docs, 5)] + [f"X{q}-{j}" for j in range(10)]
            qrels.write("".join(f"{q} 0 {d} {v}\n" for d, v in zip(judged, labels.tolist())))


def _read_trec_dicts(run_path: Path, qrels_path: Path):
    """The dicts pytrec_eval takes, read with plain Python (what a pytrec_eval user writes)."""
    run, qrels = {}, {}
    with open(run_path) as fh:
        for line in fh:
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    with open(qrels_path) as fh:
        for line in fh:
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
    return run, qrels


def bench_eval_peers(report, lines: int):
    """`rankkit eval --qrels --convention trec` against pytrec_eval and ranx on the same run and
    qrels files, metrics ndcg@10 map p@10 mrr; per-query values checked equal to 1e-9."""
    import json

    run_path = BENCH / f"trec-run-{lines}.txt"
    qrels_path = BENCH / f"trec-qrels-{lines}.txt"
    if not (run_path.exists() and qrels_path.exists()):
        BENCH.mkdir(parents=True, exist_ok=True)
        _write_trec_run_and_qrels(run_path, qrels_path, lines)
    n_run = lines // 1000 * 1000
    report.append(f"## `rankkit eval` against pytrec_eval and ranx ({n_run:,}-line TREC run)\n")
    report.append(
        f"Run {run_path.name} ({run_path.stat().st_size / 1e6:.0f} MB: {n_run // 1000:,} queries x 1000 documents, "
        f"no exact score ties) and qrels {qrels_path.name} ({qrels_path.stat().st_size / 1e6:.0f} MB: every 5th "
        "retrieved document and 10 unretrieved ones judged per query, labels 0-3). Metrics ndcg@10, map, p@10, mrr "
        "(trec_eval: ndcg_cut.10, map, P.10, recip_rank; ranx: ndcg@10, map, precision@10, mrr). Each tool once "
        "(after a warm-up on a tiny input: compiled kernels cached), wall seconds; `read` is files to the tool's "
        "input, `evaluate` the computation. Per-query values of every tool agree with rankkit's `--convention "
        "trec` to 1e-9 (checked, else the benchmark stops).\n"
    )
    metrics = ["ndcg@10", "map", "p@10", "mrr"]
    tmp = Path(tempfile.mkdtemp(prefix="rankkit-bench-"))
    tiny = tmp / "tiny.run", tmp / "tiny.qrels"
    _write_trec_run_and_qrels(tiny[0], tiny[1], 2000)  # warm-ups: every tool's code path compiled/cached first

    def rankkit_eval(run_file, qrels_file):
        cmd = rankkit_cmd("eval", "--qrels", str(qrels_file), str(run_file), "--convention", "trec", "--format",
                          "json", "--per-query", *[a for m in metrics for a in ("-m", m)])
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE)

    rankkit_eval(*tiny)
    t = time.perf_counter()
    proc = rankkit_eval(run_path, qrels_path)
    t_rk = time.perf_counter() - t
    system = json.loads(proc.stdout)["systems"][0]
    mine = {m: dict(zip(system["per_query"]["qid"], system["per_query"][m])) for m in metrics}
    rows = [("rankkit eval (subprocess, reading included)", None, None, t_rk)]
    notes = []

    def check(tool, per_query: dict):
        for m in metrics:
            got = per_query[m]
            assert set(got) == set(mine[m]), f"{tool}: different queries"
            worst = max(abs(got[q] - mine[m][q]) for q in got)
            assert worst <= 1e-9, f"{tool} {m}: differs from rankkit by {worst:g}"

    try:
        import pytrec_eval
    except ImportError:
        pytrec_eval = None
        notes.append("pytrec_eval is not installed (`pip install pytrec-eval-terrier`): column skipped.")
    if pytrec_eval is not None:
        measures = {"ndcg_cut_10": "ndcg@10", "map": "map", "P_10": "p@10", "recip_rank": "mrr"}
        run, qrels = _read_trec_dicts(*tiny)
        pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "P.10", "recip_rank"}).evaluate(run)
        t = time.perf_counter()
        run, qrels = _read_trec_dicts(run_path, qrels_path)
        t_read = time.perf_counter() - t
        t = time.perf_counter()
        res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "P.10", "recip_rank"}).evaluate(run)
        t_eval = time.perf_counter() - t
        rows.append(("pytrec_eval (dicts read with plain Python)", t_read, t_eval, t_read + t_eval))
        check("pytrec_eval", {m: {q: v[k] for q, v in res.items()} for k, m in measures.items()})
        del run, qrels, res
    try:
        import ranx
    except ImportError:
        ranx = None
        notes.append("ranx is not installed (`pip install ranx`, in the `bench` extra): column skipped.")
    if ranx is not None:
        import warnings

        names = {"ndcg@10": "ndcg@10", "map": "map", "precision@10": "p@10", "mrr": "mrr"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ranx's numba type-safety warnings
            ranx.evaluate(ranx.Qrels.from_file(str(tiny[1]), kind="trec"), ranx.Run.from_file(str(tiny[0]), kind="trec"),
                          list(names), return_mean=False)
            t = time.perf_counter()
            qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec")
            run = ranx.Run.from_file(str(run_path), kind="trec")
            t_read = time.perf_counter() - t
            t = time.perf_counter()
            res = ranx.evaluate(qrels, run, list(names), return_mean=False)
            t_eval = time.perf_counter() - t
        rows.append((f"ranx {getattr(ranx, '__version__', '')} (Qrels/Run.from_file)".replace("  ", " "),
                     t_read, t_eval, t_read + t_eval))
        keys = list(qrels.keys())
        check("ranx", {m: dict(zip(keys, res[k].tolist())) for k, m in names.items()})
        del run, qrels, res
    report.append("| tool | read s | evaluate s | total s | total / rankkit |")
    report.append("|---|---:|---:|---:|---:|")
    for name, t_read, t_eval, total in rows:
        cells = ["-" if v is None else f"{v:.2f}" for v in (t_read, t_eval)]
        report.append(f"| {name} | {cells[0]} | {cells[1]} | {total:.2f} | {total / t_rk:.2f}x |")
    report.append("")
    for note in notes:
        report.append(note + "\n")


# -- Chapelle & Keerthi's Fig. 3: PRSVM (explicit pairs) vs PRSVM+ (O(n log n)) ----------------
def bench_fig3(report, repeat, max_pairs_n=19_200):
    from rankkit.solvers.newton import NewtonPairsRankSVM, NewtonRankSVM

    d = 20
    NewtonPairsRankSVM(C=1e-3).fit(single_query(600, d, 0))
    NewtonRankSVM(C=1e-3).fit(single_query(600, d, 0))
    report.append("## Paper's Fig. 3: training time vs n, one query, binary labels (AUC optimisation)\n")
    report.append("20 dense features, C = 10 / pairs; `newton-pairs` is PRSVM (Sect. 3, O(nnz + p) per product), "
                  "`newton` is PRSVM+ (Sect. 4, O(nnz + n log n)).\n")
    report.append("| n | pairs | newton-pairs s | newton s | ratio |")
    report.append("|---:|---:|---:|---:|---:|")
    rows = []
    n = 1200
    while n <= 1_228_800:
        ds = single_query(n, d, 1)
        C = 10.0 / ds.n_pairs
        t_fast, _ = best_of(lambda ds=ds, C=C: NewtonRankSVM(C=C).fit(ds), repeat)
        t_pairs = None
        if n <= max_pairs_n:
            t_pairs, _ = best_of(lambda ds=ds, C=C: NewtonPairsRankSVM(C=C).fit(ds), 1 if n > 5000 else repeat)
        rows.append((n, t_pairs, t_fast))
        shown = f"{t_pairs:.3f}" if t_pairs is not None else "-"
        ratio = f"{t_pairs / t_fast:.1f}x" if t_pairs is not None else "-"
        report.append(f"| {n:,} | {ds.n_pairs:.3g} | {shown} | {t_fast:.4f} | {ratio} |")
        n *= 2
    paired = [(n, tp, tf) for n, tp, tf in rows if tp is not None]
    a_pairs = np.polyfit(np.log([r[0] for r in paired]), np.log([r[1] for r in paired]), 1)[0]
    big = [(n, tf) for n, _, tf in rows if n >= 9600]
    a_fast = np.polyfit(np.log([r[0] for r in big]), np.log([r[1] for r in big]), 1)[0]
    report.append(f"\nSlopes (log time vs log n): newton-pairs **{a_pairs:.2f}** (n <= {max_pairs_n:,}), "
                  f"newton **{a_fast:.2f}** (n >= 9,600).\n")


# -- Chapelle & Keerthi's Fig. 1: C against test NDCG@10 and training time, MQ2008 --------------
def bench_fig1(report, repeat):
    from rankkit.io.svmlight import read_svmlight
    from rankkit.metrics import evaluate
    from rankkit.sparse import csr_matvec
    from rankkit.solvers.newton import NewtonRankSVM

    root = SHARED / "MQ2008"
    if not root.exists():
        return
    folds = [[read_svmlight(str(root / f"Fold{k}" / f"{s}.txt")) for s in ("train", "test")] for k in range(1, 6)]
    NewtonRankSVM(C=1.0).fit(folds[0][0])
    report.append("## Paper's Fig. 1: C against test NDCG@10 and training time, MQ2008 (5 folds)\n")
    report.append("| C | mean test NDCG@10 | mean test MAP | training time, 5 folds (s) | Newton iterations (sum) |")
    report.append("|---:|---:|---:|---:|---:|")
    for C in [10.0**e for e in range(-6, 3)]:
        ndcg, maps, total, iters = [], [], 0.0, 0
        for train, test in folds:
            t, res = best_of(lambda train=train, C=C: NewtonRankSVM(C=C).fit(train), repeat)
            total += t
            iters += res.iterations
            s = csr_matvec(test.data, test.indices, test.indptr, res.w, np.empty(test.n_rows))
            m = evaluate(test.y, s, test.qptr, ("ndcg@10", "map"))
            ndcg.append(m["ndcg@10"])
            maps.append(m["map"])
        report.append(f"| {C:g} | {np.mean(ndcg):.4f} | {np.mean(maps):.4f} | {total:.3f} | {iters} |")
    report.append("")


# -- threads -------------------------------------------------------------------------------------
def bench_threads(report, repeat):
    import numba

    from rankkit.data import Dataset
    from rankkit.io.svmlight import read_svmlight
    from rankkit.solvers.newton import NewtonRankSVM

    sets = []
    mq = SHARED / "MQ2008" / "Fold1" / "train.txt"
    if mq.exists():
        sets.append(("MQ2008 Fold1 train (9,630 docs)", read_svmlight(str(mq)), 1e-3))
    rng = np.random.default_rng(0)
    nq, m, d = 10_000, 100, 46
    X = rng.random((nq * m, d))
    y = np.clip(np.floor((X @ rng.standard_normal(d)) / 2 + rng.standard_normal(nq * m)), 0, 4) + 0.0
    sets.append(("synthetic 1e6 docs (10,000 queries x 100, 46 dense features, 5 levels)", Dataset(
        data=X.ravel(), indices=np.tile(np.arange(d, dtype=np.int32), nq * m),
        indptr=np.arange(0, nq * m * d + 1, d, dtype=np.int64), y=y,
        qid=np.repeat(np.arange(nq, dtype=np.int64), m), qptr=np.arange(0, nq * m + 1, m, dtype=np.int64),
        n_features=d).validate(), 1e-5))
    sets.append(("synthetic 1e6 docs, one query, binary labels, 10 features", single_query(10**6, 10, 2), None))
    report.append("## Threads: fit time of the O(n log n) Newton solver with 1 and 2 threads\n")
    report.append("| data | C | 1 thread s | 2 threads s | speed-up | same w |")
    report.append("|---|---:|---:|---:|---:|---|")
    from rankkit import threads

    for name, ds, C in sets:
        C = C if C is not None else 1e4 / ds.n_pairs
        out = {}
        for th in (1, 2):
            with threads.limited(th):
                NewtonRankSVM(C=C).fit(ds)
                out[th] = best_of(lambda ds=ds, C=C: NewtonRankSVM(C=C).fit(ds), repeat)
        same = bool(np.array_equal(out[1][1].w, out[2][1].w))
        report.append(f"| {name} | {C:g} | {out[1][0]:.3f} | {out[2][0]:.3f} | {out[1][0] / out[2][0]:.2f}x | {same} |")
    report.append("")


# -- issue 5: stochastic pairwise descent -----------------------------------------------------
SGD_LEARNERS = ("sgd", "pegasos", "pa", "romma", "logreg", "margin-perceptron")


def bench_sgd_cli(report, repeat):
    letor = ensure(BENCH / "letor.txt", make_synthetic.write_letor)
    out = Path(tempfile.mkdtemp(prefix="rankkit-bench-"))
    report.append("## Stochastic pairwise descent against sofia-ml\n")
    report.append("| command | seconds |")
    report.append("|---|---:|")
    for sampler in ("uniform", "indexed"):
        t, _ = best_of(lambda: run(rankkit_cmd("train", str(letor), str(out / "m"), "--solver", "pegasos",
                                               "--sampler", sampler)), repeat)
        report.append(f"| `rankkit train --solver pegasos --sampler {sampler}` (100,000 steps), {letor.name} "
                      f"({letor.stat().st_size / 1e6:.0f} MB, 200,000 docs x 46), reading included "
                      f"(sofia-ml, published: 0.9 s on a 91 MB file) | {t:.2f} |")
    report.append("")


def bench_sgd_mq2008(report, repeat):
    from rankkit.io.svmlight import read_svmlight
    from rankkit.metrics import evaluate
    from rankkit.sparse import csr_matvec
    from rankkit.solvers import SOLVERS

    root = SHARED / "MQ2008"
    if not root.exists():
        return
    folds = [[read_svmlight(str(root / f"Fold{k}" / f"{s}.txt")) for s in ("train", "vali", "test")] for k in range(1, 6)]

    def test_metrics(ds, w):
        return evaluate(ds.y, csr_matvec(ds.data, ds.indices, ds.indptr, w, np.empty(ds.n_rows)), ds.qptr, ("map", "ndcg@10"))

    report.append("## Stochastic learners on MQ2008 (5 folds, 100,000 steps, lambda picked on vali by MAP)\n")
    report.append("| solver | CPU s per fold (mean) | test MAP | test NDCG@10 | lambda per fold |")
    report.append("|---|---:|---:|---:|---|")
    rows = [("newton", "C", [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0])] + [(n, "lam", [1e-4, 1e-3, 1e-2, 1e-1, 1.0]) for n in SGD_LEARNERS]
    for name, key, grid in rows:
        cls = SOLVERS[name].load()
        cls(**{key: grid[0]}).fit(folds[0][0])  # load kernels
        times, maps, ndcgs, chosen = [], [], [], []
        for train, vali, test in folds:
            best = None
            for v in grid:
                t0 = time.process_time()
                res = cls(**{key: v}).fit(train)
                cpu = time.process_time() - t0
                m = test_metrics(vali, res.w)["map"]
                if best is None or m > best[0]:
                    best = (m, v, res.w, cpu)
            _, v, w, cpu = best
            tm = test_metrics(test, w)
            times.append(cpu)
            maps.append(tm["map"])
            ndcgs.append(tm["ndcg@10"])
            chosen.append(f"{v:g}")
        label = f"{name} (O(n log n) Newton, C)" if name == "newton" else name
        report.append(f"| {label} | {np.mean(times):.3f} | {np.mean(maps):.4f} | {np.mean(ndcgs):.4f} | {', '.join(chosen)} |")
    report.append("")


def _svg_plot(path: Path, series: dict, title: str, ylabel: str) -> None:
    """A plain SVG line chart, log-scale x (iterations), no plotting library needed."""
    W, H, L, R, T, B = 740, 420, 95, 170, 40, 50
    xs = sorted({x for pts in series.values() for x, _ in pts})
    ys = [y for pts in series.values() for _, y in pts if np.isfinite(y) and y > 0]
    lo, hi = np.log10(min(ys)), np.log10(max(ys))  # log scale on both axes
    lx = np.log10(xs)
    def px(x): return L + (np.log10(x) - lx.min()) / (lx.max() - lx.min()) * (W - L - R)
    def py(y): return T + (1 - (np.log10(y) - lo) / (hi - lo)) * (H - T - B)
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{H - B + 16}" text-anchor="middle">1e{int(np.log10(x))}</text>')
    for k in range(5):
        y = 10 ** (lo + (hi - lo) * k / 4)
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.3g}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">iterations</text>')
    out.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" text-anchor="middle">{ylabel}</text>')
    for i, (name, pts) in enumerate(series.items()):
        c = colors[(i // 2) % len(colors)]  # train and test of one learner share a colour
        dash = ' stroke-dasharray="5,3"' if name.endswith("test") else ""
        path_d = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}"
                          for j, (x, y) in enumerate(pts) if np.isfinite(y) and y > 0)
        out.append(f'<path d="{path_d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - R + 8}" y="{T + 14 * i + 4}" fill="{c}">{name}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def bench_sgd_convergence(report, max_iter=10**7):
    from rankkit.io.svmlight import read_svmlight
    from rankkit.solvers import SOLVERS
    from rankkit.solvers.sgd import hinge_objective

    root = SHARED / "MQ2008" / "Fold1"
    if not root.exists():
        return
    train, test = read_svmlight(str(root / "train.txt")), read_svmlight(str(root / "test.txt"))
    lam = 1e-3
    iters = [10**k for k in range(2, int(np.log10(max_iter)) + 1)]
    report.append(f"## Convergence: the RankSVM objective (lambda = {lam:g}) against iterations, MQ2008 Fold1\n")
    report.append("lambda/2 ||w||^2 + mean hinge over all pairs, on train and on test (the paper's Fig. 2). "
                  "Plot: `BENCHMARKS-convergence.svg`.\n")
    report.append("| learner | set | " + " | ".join(f"1e{int(np.log10(i))}" for i in iters) + " |")
    report.append("|---|---|" + "---:|" * len(iters))
    series = {}
    for name in SGD_LEARNERS:
        cls = SOLVERS[name].load()
        tr, te = [], []
        for it in iters:
            res = cls(lam=lam, iterations=it).fit(train)
            tr.append(hinge_objective(train, res.w, lam))
            te.append(hinge_objective(test, res.w, lam) if np.all(np.isfinite(res.w)) else float("nan"))
        report.append(f"| {name} | train | " + " | ".join(f"{v:.4f}" for v in tr) + " |")
        report.append(f"| {name} | test | " + " | ".join(f"{v:.4f}" for v in te) + " |")
        series[f"{name} train"] = list(zip(iters, tr))
        series[f"{name} test"] = list(zip(iters, te))
    _svg_plot(ROOT / "BENCHMARKS-convergence.svg", series, "MQ2008 Fold1: RankSVM objective vs iterations (log-log)",
              "lambda/2||w||^2 + mean hinge (dashed: test)")
    report.append("")


def bench_sgd_auc(report, repeat):
    """RCV1-like single-query AUC problem: ~800,000 sparse examples, ~50,000 features, 0.2% positives."""
    import scipy.sparse as sp

    from rankkit.data import Dataset
    from rankkit.metrics import per_query
    from rankkit.sparse import csr_matvec
    from rankkit.solvers.newton import NewtonRankSVM
    from rankkit.solvers.sgd import PegasosRankSVM

    rng = np.random.default_rng(0)
    n, d, per_row = 800_000, 50_000, 75
    cols = rng.integers(0, d, size=(n, per_row))
    cols.sort(axis=1)
    keep = np.ones_like(cols, dtype=bool)
    keep[:, 1:] = cols[:, 1:] != cols[:, :-1]
    X = sp.csr_matrix((rng.random(cols.shape)[keep], cols[keep], np.concatenate([[0], np.cumsum(keep.sum(1))])),
                      shape=(n, d))
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int64)
    w_true = rng.standard_normal(d) * (rng.random(d) < 0.05)
    score = X @ w_true + rng.standard_normal(n) * 0.5
    y = (score > np.quantile(score, 0.998)).astype(np.float64)
    split = int(0.8 * n)

    def part(a, b):
        Xp = X[a:b]
        return Dataset(data=Xp.data, indices=Xp.indices.astype(np.int32), indptr=Xp.indptr.astype(np.int64),
                       y=y[a:b], qid=np.zeros(b - a, dtype=np.int64), qptr=np.array([0, b - a], dtype=np.int64),
                       n_features=d, has_qid=False).validate()

    train, test = part(0, split), part(split, n)
    report.append(f"## Large single-query AUC problem (RCV1-shaped): {n:,} sparse examples, {d:,} features, "
                  f"{X.nnz / n:.0f} non-zeros per row, {y.mean() * 100:.1f}% positives; 80/20 split\n")
    report.append("| solver | training s | test ROC area |")
    report.append("|---|---:|---:|")
    for name, make in [("pegasos, roc sampler, 100,000 steps, lambda 1e-4",
                        lambda: PegasosRankSVM(lam=1e-4, sampler="roc")),
                       ("newton (exact O(n log n) RankSVM), C = 1e-3 / positives", lambda: NewtonRankSVM(C=1e-3 / train.y.sum()))]:
        make().fit(part(0, 2000) if False else train) if name.startswith("pegasos") else None
        t, res = best_of(lambda: make().fit(train), repeat)
        s = csr_matvec(test.data, test.indices, test.indptr, res.w, np.empty(test.n_rows))
        auc = per_query("auc", test.y, s, test.qptr, "exp")[0]
        report.append(f"| {name} | {t:.3f} | {auc:.4f} |")
    report.append("")


# -- issue 7: Factorized Ranking SVM -------------------------------------------------------------
def bench_factorized_mq2008(report, repeat):
    from rankkit.errors import UsageError
    from rankkit.io.svmlight import read_svmlight
    from rankkit.metrics import evaluate
    from rankkit.sparse import csr_matvec
    from rankkit.solvers.factorized import FactorizedRankSVM
    from rankkit.solvers.newton import NewtonRankSVM

    root = SHARED / "MQ2008"
    if not root.exists():
        return
    metrics = ("map", "ndcg@1", "ndcg@3", "ndcg@5")
    folds = [[read_svmlight(str(root / f"Fold{k}" / f"{s}.txt")) for s in ("train", "vali", "test")] for k in range(1, 6)]

    def scores(ds, w):
        return csr_matvec(ds.data, ds.indices, ds.indptr, w, np.empty(ds.n_rows))

    results = {"newton": [], "factorized": []}
    chosen = []
    t_fact = 0.0
    for train, vali, test in folds:
        best = None
        for C in (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0):
            w = NewtonRankSVM(C=C).fit(train).w
            m = evaluate(vali.y, scores(vali, w), vali.qptr, ("map",))["map"]
            if best is None or m > best[0]:
                best = (m, w)
        results["newton"].append(evaluate(test.y, scores(test, best[1]), test.qptr, metrics))
        best = None
        for K in (5, 10):
            for C in (1e-3, 1e-2):
                for eta0 in (1e-3, 1e-2):
                    t0 = time.perf_counter()
                    try:
                        res = FactorizedRankSVM(C=C, K=K, eta0=eta0, iterations=200, valid=vali, patience=20).fit(train)
                    except UsageError:  # diverged with this learning rate
                        continue
                    t_fact += time.perf_counter() - t0
                    m = evaluate(vali.y, scores(vali, res.w), vali.qptr, ("map",))["map"]
                    if best is None or m > best[0]:
                        best = (m, res.w, f"K={K} C={C:g} eta0={eta0:g}")
        results["factorized"].append(evaluate(test.y, scores(test, best[1]), test.qptr, metrics))
        chosen.append(best[2])
    report.append("## Factorized Ranking SVM on MQ2008 (5 folds; K, C, eta0 picked on vali by MAP)\n")
    report.append("| method | MAP | NDCG@1 | NDCG@3 | NDCG@5 |")
    report.append("|---|---:|---:|---:|---:|")
    for name, label in (("newton", "rankkit RankSVM (newton, C on vali)"), ("factorized", "rankkit factorized")):
        means = [np.mean([r[m] for r in results[name]]) for m in metrics]
        report.append(f"| {label} | " + " | ".join(f"{v:.4f}" for v in means) + " |")
    report.append("| paper's Table 4: RSVM | 0.4713 | 0.3686 | 0.4277 | 0.4730 |")
    report.append("| paper's Table 4: Fac-RSVM | 0.4714 | 0.3660 | 0.4289 | 0.4731 |")
    report.append(f"\nChosen per fold: {'; '.join(chosen)}. Factorized training over the whole grid: {t_fact:.1f} s.\n")


def bench_factorized_scaling(report, repeat):
    from rankkit.data import Dataset
    from rankkit.solvers.factorized import FactorState

    rng = np.random.default_rng(0)
    d, m, K = 10, 100, 10
    report.append("## Factorized Ranking SVM: time per iteration against N (queries of 100 documents, 10 dense "
                  "features, 5 levels, K = 10)\n")
    report.append("| N | pairs | s per iteration |")
    report.append("|---:|---:|---:|")
    ns, ts = [], []
    w_true = rng.standard_normal(d)
    for n in (10**4, 10**5, 10**6):
        X = rng.random((n, d))
        z = X @ w_true + 0.3 * rng.standard_normal(n)
        y = np.digitize(z, np.quantile(z, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)  # 5 levels, LETOR-like
        ds = Dataset(data=X.ravel(), indices=np.tile(np.arange(d, dtype=np.int32), n),
                     indptr=np.arange(0, n * d + 1, d, dtype=np.int64), y=y,
                     qid=np.repeat(np.arange(n // m, dtype=np.int64), m),
                     qptr=np.arange(0, n + 1, m, dtype=np.int64), n_features=d).validate()
        state = FactorState(ds, 1e-3, "hinge")
        V = rng.standard_normal((n, K)) * 0.01
        state.value_grad(V)
        t, _ = best_of(lambda: state.value_grad(V), repeat)
        ns.append(n)
        ts.append(t)
        report.append(f"| {n:,} | {ds.n_pairs:.3g} | {t:.4f} |")
    a = np.polyfit(np.log(ns), np.log(ts), 1)[0]
    report.append(f"\nFitted exponent of time per iteration vs N: **{a:.2f}** (linear).\n")


# -- issue 6: regularisation paths ------------------------------------------------------------
def two_gaussians(n_per_class: int, seed: int = 0):
    """Hastie et al.'s two-Gaussian mixture, one query, binary labels: the classes differ in mean."""
    from rankkit.data import Dataset

    rng = np.random.default_rng(seed)
    X = np.vstack([rng.standard_normal((n_per_class, 2)) + [1.0, 1.0], rng.standard_normal((n_per_class, 2)) - [1.0, 1.0]])
    y = np.concatenate([np.ones(n_per_class), np.zeros(n_per_class)])
    n = 2 * n_per_class
    return Dataset(data=X.ravel(), indices=np.tile(np.arange(2, dtype=np.int32), n),
                   indptr=np.arange(0, 2 * n + 1, 2, dtype=np.int64), y=y, qid=np.zeros(n, dtype=np.int64),
                   qptr=np.array([0, n], dtype=np.int64), n_features=2, has_qid=False).validate()


def bench_path(report, repeat):
    import warnings

    from rankkit.paths.exact import exact_path

    report.append("## Exact regularisation path (Zapien et al.): events and time against the number of constraints\n")
    report.append("Two-Gaussian mixture (Hastie et al.), one query, binary labels, 2 features; the whole path down to "
                  "lambda = 1e-6 lambda_0.\n")
    report.append("| points | graph | pairs (constraints) | kernel | events | breakpoints | seconds | largest I_alpha |")
    report.append("|---:|---|---:|---|---:|---:|---:|---:|")
    for n_per in (100, 150, 200):
        ds = two_gaussians(n_per)
        for graph in ("full", "reduced"):
            for kernel in ("linear", "rbf"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    res = exact_path(ds, None, kernel=kernel, gamma=0.5, graph=graph, max_events=10**6)
                    t = time.perf_counter() - t0
                largest = max(b.n_alpha for b in res.breakpoints)
                report.append(f"| {2 * n_per} | {graph} | {res.n_pairs:,} | {kernel} | {res.n_events:,} | "
                              f"{len(res.breakpoints):,} | {t:.2f} | {largest} |")
    report.append("")
    from rankkit import commands

    root = SHARED / "MQ2008"
    if root.exists():
        lines = []
        t0 = time.perf_counter()
        for metric in ("ndcg@10", "map"):
            lines.append(f"validation metric {metric}:")
            commands.path(folds=str(root), method="grid", metric=metric, jobs=2, echo=lines.append)
        t = time.perf_counter() - t0
        report.append(f"## Grid path on MQ2008: 30 values of C x 5 folds, C chosen on vali, --jobs 2 ({t / 2:.1f} s per run)\n")
        report.append("```")
        report.extend(lines)
        report.append("```\n")


# -- 3. scaling --------------------------------------------------------------------------------
def single_query(n: int, d: int, seed: int):
    from rankkit.data import Dataset

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    y = (X @ w + rng.standard_normal(n) * 2.0 > 0.8).astype(np.float64)
    return Dataset(
        data=X.ravel(),
        indices=np.tile(np.arange(d, dtype=np.int32), n),
        indptr=np.arange(0, n * d + 1, d, dtype=np.int64),
        y=y,
        qid=np.ones(n, dtype=np.int64),
        qptr=np.array([0, n], dtype=np.int64),
        n_features=d,
        source=f"single-query n={n}",
    ).validate()


def bench_scaling(report, repeat, max_n):
    from rankkit.solvers.newton import NewtonRankSVM

    d = 10
    sizes = [n for n in (10**4, 10**5, 10**6, 10**7) if n <= max_n]
    NewtonRankSVM(C=1e-3).fit(single_query(1000, d, 0))  # load kernels
    report.append("## Scaling: Newton training time vs n, one query, binary labels, 10 dense features\n")
    report.append("C = 10^4 / (number of pairs), so the optimum w is comparable across n.\n")
    report.append("| n | pairs | Newton iter. | CG iter. | fit s | s / iteration |")
    report.append("|---:|---:|---:|---:|---:|---:|")
    ns, ts = [], []
    for n in sizes:
        ds = single_query(n, d, 1)
        C = 1e4 / ds.n_pairs
        t, res = best_of(lambda ds=ds, C=C: NewtonRankSVM(C=C).fit(ds), repeat if n < 10**7 else 1)
        ns.append(n)
        ts.append(t)
        report.append(
            f"| {n:,} | {ds.n_pairs:.3g} | {res.iterations} | {res.extra['cg_iterations']} | {t:.3f} | {t / res.iterations:.4f} |"
        )
        del ds  # free the largest inputs before the next size
    if len(ns) >= 2:
        a, _ = np.polyfit(np.log(ns), np.log(ts), 1)
        report.append(f"\nFitted exponent of fit time vs n (least squares on log-log): **{a:.2f}**.\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-n", type=float, default=1e7, help="largest n in the scaling run")
    ap.add_argument("--eval-lines", type=float, default=1e7, help="run lines of the eval-peers benchmark")
    ap.add_argument("--only", choices=["parse", "cli", "eval", "eval-peers", "scaling", "fig3", "fig1", "threads", "sgd-cli", "sgd-mq2008",
                                       "sgd-convergence", "sgd-auc", "factorized-mq2008",
                                       "factorized-scaling", "path"], action="append")
    args = ap.parse_args()
    report = [f"# rankkit benchmark, {dt.datetime.now().strftime('%Y-%m-%d %H:%M')}\n", f"Machine: {machine()}\n"]
    sections = args.only or ["parse", "cli", "eval", "eval-peers", "scaling", "fig3", "fig1", "threads", "sgd-cli", "sgd-mq2008",
                             "sgd-convergence", "sgd-auc", "factorized-mq2008", "factorized-scaling", "path"]
    if "parse" in sections:
        bench_parse(report, args.repeat)
    if "cli" in sections:
        bench_cli(report, args.repeat)
    if "eval" in sections:
        bench_eval(report, args.repeat)
    if "eval-peers" in sections:
        bench_eval_peers(report, int(args.eval_lines))
    if "scaling" in sections:
        bench_scaling(report, args.repeat, int(args.max_n))
    if "fig3" in sections:
        bench_fig3(report, args.repeat)
    if "fig1" in sections:
        bench_fig1(report, args.repeat)
    if "threads" in sections:
        bench_threads(report, args.repeat)
    if "sgd-cli" in sections:
        bench_sgd_cli(report, args.repeat)
    if "sgd-mq2008" in sections:
        bench_sgd_mq2008(report, args.repeat)
    if "sgd-convergence" in sections:
        bench_sgd_convergence(report)
    if "sgd-auc" in sections:
        bench_sgd_auc(report, args.repeat)
    if "factorized-mq2008" in sections:
        bench_factorized_mq2008(report, args.repeat)
    if "factorized-scaling" in sections:
        bench_factorized_scaling(report, args.repeat)
    if "path" in sections:
        bench_path(report, args.repeat)
    text = "\n".join(report)
    print(text)
    (ROOT / "out").mkdir(exist_ok=True)
    (ROOT / "out" / "bench.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
