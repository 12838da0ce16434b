#!/usr/bin/env python3
"""rankkit side by side with the C tools, in one run (issue 11). `make bench-peers`.

    python scripts/bench_peers.py [--peers DIR] [--repeat N] [--update BENCHMARKS.md] [--only NAME ...]

Every figure is rankkit's and a peer's wall time (and peak memory) on the same file in the same
run, and their ratio. Peers are found through environment variables or --peers (their builds stay
outside the repository; see ../shared/PEERS.md):

    RANKKIT_PEERS=/tmp/peers              a folder holding liblinear/train and sofia/sofia-ml
    RANKKIT_LIBLINEAR=/path/to/train      liblinear-ranksvm's train program (overrides)
    RANKKIT_SOFIA=/path/to/sofia-ml       sofia-ml's program (overrides)
    RANKKIT_SVMRANK=/path/to/svm_rank_learn  svm_rank's learner (overrides; RANKKIT_PEERS: svm_rank/svm_rank_learn)

A missing peer is said in the report and rankkit's own figures are still printed.

Inputs are generated under bench-data/ by scripts/make_synthetic.py (the generator and its
arguments are printed with each figure); MQ2008 comes from ../shared/data when present.

With --update FILE, the report replaces the part of FILE between the lines
`<!-- bench-peers:begin -->` and `<!-- bench-peers:end -->` (appended if absent); the report is
always printed and written to out/bench-peers.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
BENCH = ROOT / "bench-data"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))  # this checkout's rankkit, not an installed one

import make_synthetic  # noqa: E402

BEGIN, END = "<!-- bench-peers:begin -->", "<!-- bench-peers:end -->"

# The generated inputs: name -> (file name, generator, keyword arguments). Recorded in the report.
INPUTS = {
    "letor200k": ("letor.txt", "write_letor", dict(queries=2000, docs=100, features=46, levels=5, seed=0)),
    "binary1m": ("binary20.txt", "write_binary", dict(docs=1_000_000, features=20, seed=0)),
    "mslr30k": ("mslr30k.txt", "write_mslr", dict(queries=5000, docs=100, seed=0)),
}


def generated(name: str) -> Path:
    fname, fn, kw = INPUTS[name]
    path = BENCH / fname
    stamp = path.with_suffix(".args.json")
    want = json.dumps({"generator": fn, **kw}, sort_keys=True)
    if not path.exists() or not stamp.exists() or stamp.read_text() != want:
        BENCH.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        getattr(make_synthetic, fn)(str(tmp), **kw)
        tmp.rename(path)
        stamp.write_text(want)
    return path


def generator_text(name: str) -> str:
    fname, fn, kw = INPUTS[name]
    args = ", ".join(f"{k}={v}" for k, v in kw.items())
    return f"`scripts/make_synthetic.py` `{fn}(path, {args})`"


# -- machine and peers ---------------------------------------------------------------------------
def machine() -> str:
    model = platform.processor() or "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        kb = int(open("/proc/meminfo").readline().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        mem = ""
    import numba
    import numpy

    return (f"{model}, {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable){mem}; Python "
            f"{platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}; "
            f"{platform.system()} {platform.release()}")


def load_now() -> str:
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def find_peers(folder: str | None) -> dict:
    folder = folder or os.environ.get("RANKKIT_PEERS")
    cands = {
        "liblinear": [os.environ.get("RANKKIT_LIBLINEAR")] + ([os.path.join(folder, p) for p in (
            "liblinear/train", "liblinear-ranksvm/train")] if folder else []),
        "liblinear_predict": [os.environ.get("RANKKIT_LIBLINEAR_PREDICT")] + ([os.path.join(folder, p) for p in (
            "liblinear/predict", "liblinear-ranksvm/predict")] if folder else []),
        "sofia": [os.environ.get("RANKKIT_SOFIA")] + ([os.path.join(folder, p) for p in (
            "sofia/sofia-ml", "sofia-ml/sofia-ml", "sofia/src/sofia-ml", "sofia-ml/src/sofia-ml")] if folder else []),
        "svm_rank": [os.environ.get("RANKKIT_SVMRANK")] + ([os.path.join(folder, p) for p in (
            "svm_rank/svm_rank_learn", "svm_rank_learn")] if folder else []),
    }
    found = {}
    for name, paths in cands.items():
        found[name] = next((p for p in paths if p and os.path.isfile(p) and os.access(p, os.X_OK)), None)
    return found


# -- running -------------------------------------------------------------------------------------
def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return env


def rankkit_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "rankkit", *map(str, args)]


# Each command is started by a small launcher process: on Linux a child's peak RSS (ru_maxrss)
# starts at its parent's when it was forked, and this process holds hundreds of MB.
LAUNCHER = r"""
import json, os, sys, time
t = time.time()
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
print(json.dumps({"start": t, "end": time.time(), "cpu": ru.ru_utime + ru.ru_stime, "rss_kb": ru.ru_maxrss,
                  "code": os.waitstatus_to_exitcode(status)}))
"""


def timed(cmds: list[list[str]]) -> tuple[float, float, float]:
    """Run `cmds` at once; (wall seconds from the first start to the last end, total CPU seconds,
    largest peak RSS in MB)."""
    procs = [subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, *map(str, c)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=_env()) for c in cmds]
    outs = []
    for p, c in zip(procs, cmds):
        out, err = p.communicate()
        lines = out.decode(errors="replace").strip().splitlines()
        r = json.loads(lines[-1]) if lines else {"code": p.returncode}
        if p.returncode != 0 or r["code"] != 0:
            raise RuntimeError(f"{shlex.join(map(str, c))} failed ({r['code']}): {err.decode(errors='replace').strip()[-500:]}")
        outs.append(r)
    wall = max(r["end"] for r in outs) - min(r["start"] for r in outs)
    return wall, sum(r["cpu"] for r in outs), max(r["rss_kb"] for r in outs) / 1024


def best(cmds, repeat: int):
    runs = [timed(cmds) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


class Report:
    def __init__(self):
        self.lines: list[str] = []
        self.rows: list[tuple] = []  # (run, rankkit, peer, ratio) for the summary table
        self.passes: list[tuple] = []  # (run, _train_stages' figures): the Newton rows in passes over the data
        self.data: dict = {}

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)


def ratio(a: float, b: float | None) -> str:
    return f"{a / b:.2f}x" if b else "-"


# -- sections ------------------------------------------------------------------------------------
def bench_train_big(rep: Report, peers, repeat, tmp):
    """200k file and 1M single query: train time and peak memory vs liblinear-ranksvm."""
    for key, C, what in (("letor200k", "1", "200,000 docs (2000 queries x 100 docs x 46 features, 5 levels)"),
                         ("binary1m", "1", "1,000,000 docs in one query, binary labels, 20 features")):
        path = generated(key)
        mb = path.stat().st_size / 1e6
        subprocess.run(rankkit_cmd("train", path, f"{tmp}/warm.model", "-C", C), check=True, env=_env(),
                       stdout=subprocess.DEVNULL)  # compiled kernels cached before timing
        rk = best([rankkit_cmd("train", path, f"{tmp}/rk.model", "-C", C)], repeat)
        ll = best([[peers["liblinear"], "-s", "8", "-c", C, str(path), f"{tmp}/ll.model"]], repeat) if peers["liblinear"] else None
        rep.add(f"### train, {what}, C={C}\n",
                f"File {path.name}, {mb:.0f} MB, made by {generator_text(key)}.\n",
                f"- rankkit: `rankkit train {path.name} MODEL -C {C}`",
                f"- liblinear-ranksvm: `train -s 8 -c {C} {path.name} MODEL`\n",
                "| program | wall s | CPU s | peak MB |", "|---|---:|---:|---:|",
                f"| rankkit | {rk[0]:.2f} | {rk[1]:.2f} | {rk[2]:.0f} |")
        if ll:
            rep.add(f"| liblinear-ranksvm | {ll[0]:.2f} | {ll[1]:.2f} | {ll[2]:.0f} |",
                    f"| **ratio rankkit / liblinear** | **{ratio(rk[0], ll[0])}** | {ratio(rk[1], ll[1])} | **{ratio(rk[2], ll[2])}** |")
        else:
            rep.add("| liblinear-ranksvm | not found (set RANKKIT_PEERS or RANKKIT_LIBLINEAR) | | |")
        stages = _train_stages(path, C)
        label = f"train {mb:.0f} MB ({'200k docs' if key == 'letor200k' else '1M docs, one query'}), C={C}"
        rep.add("", f"Inside one rankkit process (kernels loaded, the reader as `rankkit train` calls it): reading "
                f"{stages['read']:.2f} s (values {stages['values']}), {passes_text(stages)} ({stages['cg']} CG steps, "
                f"objective {stages['objective']}).")
        rep.passes.append((label, stages))
        rep.add("")
        rep.rows.append((label, f"{rk[0]:.2f} s, {rk[2]:.0f} MB",
                         f"liblinear-ranksvm {ll[0]:.2f} s, {ll[2]:.0f} MB" if ll else "liblinear-ranksvm: not found",
                         f"{ratio(rk[0], ll and ll[0])} time, {ratio(rk[2], ll and ll[2])} memory" if ll else "-"))
        rep.data[key] = {"rankkit": rk, "liblinear": ll, "stages": stages}


def _train_stages(path, C: str) -> dict:
    """Reading and fitting time of `rankkit train FILE -C C` in one process (its second fit: the
    kernels loaded), with the fit's figures and how the values were stored; and the fit in passes
    over the data (issue 39): its time over the median time of one product X.v on the same matrix,
    measured in the same process right after it, with the fit's Hessian-vector products counted."""
    proc = subprocess.run([sys.executable, "-c", (
        "import sys, time, numpy as np; from rankkit.io.svmlight import read_svmlight; from rankkit import training\n"
        "from rankkit.objectives.pairwise import PairwiseObjective as P; from rankkit.sparse import csr_matvec\n"
        "plan = training.plan(None, {'C': float(sys.argv[2])}, {}, None, False)\n"
        "kw = dict(narrow_indices=plan.narrow_indices, narrow_values=plan.narrow_values)\n"
        "hv = [0]; inner = P.hess_vec\n"
        "def counted(self, s):\n"
        "    hv[0] += 1\n"
        "    return inner(self, s)\n"
        "P.hess_vec = counted\n"
        "t = time.perf_counter(); ds = read_svmlight(sys.argv[1], **kw); read = time.perf_counter() - t\n"
        "for _ in range(2):\n"
        "    hv[0] = 0; t1 = time.perf_counter(); m, r = training.fit_dataset(plan, ds); t2 = time.perf_counter()\n"
        "w = np.random.default_rng(0).standard_normal(ds.n_features); out = np.empty(ds.n_rows); ts = []\n"
        "for _ in range(7):\n"
        "    t = time.perf_counter(); csr_matvec(ds.data, ds.indices, ds.indptr, w, out, ds.value_scale); ts.append(time.perf_counter() - t)\n"
        "print(read, t2 - t1, r.iterations, r.extra.get('cg_iterations'), repr(r.objective), ds.value_scale, float(np.median(ts)), hv[0])"),
        str(path), C], check=True, capture_output=True, text=True, env=_env())
    read, fit, newton, cg, objective, scale, xv, hv = proc.stdout.split()
    values = "float64" if float(scale) == 1.0 else f"as int32 decimal codes / {float(scale):g}, exact"
    return {"read": float(read), "fit": float(fit), "newton": int(newton), "cg": cg, "objective": objective,
            "values": values, "xv": float(xv), "passes": float(fit) / float(xv), "hv": int(hv)}


def passes_text(stages: dict) -> str:
    """The fit in passes over the data, as the tables give it."""
    return (f"fit {stages['fit']:.2f} s = **{stages['passes']:.0f} passes** of X.v ({stages['xv'] * 1e3:.1f} ms each, "
            f"same process), {stages['hv']} Hessian-vector products, {stages['newton']} Newton steps")


def bench_concurrent(rep: Report, peers, repeat, tmp):
    """4 trains of the 200k file at once (as make -j4 runs them)."""
    path = generated("letor200k")
    n = 4
    cfgs = [("rankkit, default threads", lambda i: rankkit_cmd("train", path, f"{tmp}/c{i}.model", "-C", "1")),
            ("rankkit --threads 1", lambda i: rankkit_cmd("train", path, f"{tmp}/c{i}.model", "-C", "1", "--threads", "1"))]
    if peers["liblinear"]:
        cfgs.append(("liblinear-ranksvm", lambda i: [peers["liblinear"], "-s", "8", "-c", "1", str(path), f"{tmp}/l{i}.model"]))
    # the configurations take turns (one round = each once, the order rotated from round to round)
    # after one round that is not counted, so that a drift of the machine during the section (page
    # cache, clock, other load) and the first run's extra cost reach all of them alike
    rounds = max(repeat, 7)
    runs: dict = {name: [] for name, _ in cfgs}
    for r in range(rounds + 1):
        for name, make in cfgs[r % len(cfgs):] + cfgs[: r % len(cfgs)]:
            t = timed([make(i) for i in range(n)])
            if r:
                runs[name].append(t)
    res = {name: min(r, key=lambda x: x[0]) for name, r in runs.items()}
    med = {name: statistics.median(x[0] for x in r) for name, r in runs.items()}
    ll = res.get("liblinear-ranksvm")
    rep.add(f"### {n} trains of the 200k file at once (`make -j{n}`)\n",
            f"{n} processes started together, wall time until the last ends; CPU s summed over them (of the "
            f"best run). {rounds} rounds after one not counted, the configurations taking turns in a rotated order; "
            f"best and median wall of the rounds.\n",
            "| program | wall s, best | wall s, median | CPU s | wall / liblinear |", "|---|---:|---:|---:|---:|")
    for name, r in res.items():
        rep.add(f"| {name} | {r[0]:.2f} | {med[name]:.2f} | {r[1]:.2f} | {ratio(r[0], ll and ll[0])} |")
    if not ll:
        rep.add("| liblinear-ranksvm | not found | | |")
    rep.add("")
    d, t1 = res["rankkit, default threads"], res["rankkit --threads 1"]
    rep.rows.append((f"{n} such 200k trains at once", f"{d[0]:.2f} s ({t1[0]:.2f} s with `--threads 1`; medians "
                     f"{med['rankkit, default threads']:.2f} / {med['rankkit --threads 1']:.2f} s)",
                     f"liblinear-ranksvm {ll[0]:.2f} s" if ll else "liblinear-ranksvm: not found",
                     ratio(d[0], ll and ll[0])))
    rep.data["concurrent"] = res
    rep.data["concurrent_median"] = med
    rep.data["concurrent_rounds"] = {name: [x[0] for x in r] for name, r in runs.items()}


def bench_pegasos(rep: Report, peers, repeat, tmp):
    """Pegasos 1e5 steps on the 200k file, reading included, vs sofia-ml."""
    path = generated("letor200k")
    rk_args = ["train", path, f"{tmp}/p.model", "--solver", "pegasos", "--lambda", "0.1", "--iterations", "100000"]
    subprocess.run(rankkit_cmd(*rk_args), check=True, env=_env(), stdout=subprocess.DEVNULL)
    rk = best([rankkit_cmd(*rk_args)], repeat)
    sf = None
    if peers["sofia"]:
        sf = best([[peers["sofia"], "--learner_type", "pegasos", "--loop_type", "rank", "--lambda", "0.1",
                    "--iterations", "100000", "--training_file", str(path), "--model_out", f"{tmp}/s.model"]], repeat)
    rep.add("### Pegasos, 100,000 steps on the 200k file, reading included\n",
            "- rankkit: `rankkit train letor.txt MODEL --solver pegasos --lambda 0.1 --iterations 100000`",
            "- sofia-ml: `sofia-ml --learner_type pegasos --loop_type rank --lambda 0.1 --iterations 100000 "
            "--training_file letor.txt --model_out MODEL`\n",
            "| program | wall s | CPU s | peak MB |", "|---|---:|---:|---:|",
            f"| rankkit | {rk[0]:.2f} | {rk[1]:.2f} | {rk[2]:.0f} |")
    if sf:
        rep.add(f"| sofia-ml | {sf[0]:.2f} | {sf[1]:.2f} | {sf[2]:.0f} |",
                f"| **ratio** | **{ratio(rk[0], sf[0])}** | {ratio(rk[1], sf[1])} | {ratio(rk[2], sf[2])} |")
    else:
        rep.add("| sofia-ml | not found (set RANKKIT_PEERS or RANKKIT_SOFIA) | | |")
    # where rankkit's time goes: reading vs steps, in one process
    proc = subprocess.run([sys.executable, "-c", (
        "import sys, time; from rankkit.io.svmlight import read_svmlight; from rankkit.solvers.sgd import PegasosRankSVM\n"
        "kw = dict(narrow_indices=True, narrow_values=True)  # as `rankkit train --solver pegasos` reads\n"
        "ds = read_svmlight(sys.argv[1], **kw); PegasosRankSVM(lam=0.1, iterations=1000).fit(ds)\n"
        "t = time.perf_counter(); ds = read_svmlight(sys.argv[1], **kw); t1 = time.perf_counter()\n"
        "PegasosRankSVM(lam=0.1, iterations=100000).fit(ds); t2 = time.perf_counter()\n"
        "print(t1 - t, t2 - t1)"), str(path)], check=True, capture_output=True, text=True, env=_env())
    t_read, t_fit = (float(v) for v in proc.stdout.split())
    rep.add("", f"Inside one rankkit process (kernels loaded): reading {t_read:.2f} s, 100,000 steps {t_fit:.2f} s.\n")
    rep.rows.append(("Pegasos, 1e5 steps on the 200k file, reading included (goal <= 0.5x time, <= 1.0x memory)",
                     f"{rk[0]:.2f} s, {rk[2]:.0f} MB",
                     f"sofia-ml {sf[0]:.2f} s, {sf[2]:.0f} MB" if sf else "sofia-ml: not found",
                     f"{ratio(rk[0], sf and sf[0])} time, {ratio(rk[2], sf and sf[2])} memory"))
    rep.data["pegasos"] = {"rankkit": rk, "sofia": sf, "read": t_read, "steps": t_fit}


def bench_small(rep: Report, peers, repeat, tmp):
    """MQ2008 Fold1 train/predict/eval against the floor process, with the breakdown."""
    import bench_start

    fold = SHARED / "MQ2008" / "Fold1"
    if not (fold / "train.txt").exists():
        rep.add("### Small fits: MQ2008 not found under ../shared/data: skipped\n")
        return
    res = bench_start.run(str(fold / "train.txt"), str(fold / "test.txt"), repeat)
    ll = best([[peers["liblinear"], "-s", "8", "-c", "0.001", str(fold / "train.txt"), f"{tmp}/mq.model"]], repeat) \
        if peers["liblinear"] else None
    rep.add("### Small fits: MQ2008 Fold1 (9,630 docs) train, predict, eval against a floor process\n",
            "Commands: `rankkit train train.txt M -C 1e-3`, `rankkit predict test.txt M S`, `rankkit eval test.txt S` "
            "(`python scripts/bench_start.py train.txt test.txt`). Floor: a process that imports numpy and numba and "
            "calls one cached njit function (what any numba program pays; rankkit's runs on kernels compiled ahead "
            "of time pay less). Stages in seconds, measured inside one fresh process.\n",
            *bench_start.table(res), "")
    if ll:
        rep.add(f"liblinear-ranksvm `train -s 8 -c 0.001` on the same file: {ll[0]:.3f} s.\n")
    # the same train on numba's JIT (its disk cache filled first) against the ahead-of-time kernels
    train_args = ("train", fold / "train.txt", f"{tmp}/mqj.model", "-C", "1e-3")
    jit_cmd = ["env", "RANKKIT_AOT=0", *rankkit_cmd(*train_args)]
    timed([jit_cmd])
    jit, aot = best([jit_cmd], repeat), best([rankkit_cmd(*train_args)], repeat)
    rep.add(f"The same train on numba's JIT (`RANKKIT_AOT=0`, its cache filled first): {jit[0]:.3f} s and "
            f"{jit[2]:.0f} MB peak, against {aot[0]:.3f} s and {aot[2]:.0f} MB on the kernels compiled ahead of time "
            f"({aot[0] / jit[0]:.2f}x the time, {jit[2] - aot[2]:.0f} MB less).\n")
    rep.data["small_jit"] = {"jit": jit, "aot": aot}
    stages = _train_stages(fold / "train.txt", "1e-3")
    rep.add(f"In passes over the data (one process, kernels loaded): {passes_text(stages)}.\n")
    rep.passes.append(("train, MQ2008 Fold1 (9,630 docs), C=1e-3", stages))
    tr = res["commands"]["train"]["wall"]
    rep.rows.append(("train, MQ2008 Fold1 (9,630 docs)", f"{tr:.2f} s (floor {res['floor']:.2f} s: "
                     f"{tr / res['floor']:.2f}x)", f"liblinear-ranksvm {ll[0]:.2f} s" if ll else "liblinear-ranksvm: not found",
                     ratio(tr, ll and ll[0])))
    rep.data["small"] = res


READER_PROBE = r"""
import json, resource, sys, time
from rankkit import threads as T
from rankkit.io.svmlight import read_svmlight
path, tiny, threads, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
T.apply(threads)
read_svmlight(tiny)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
ds = read_svmlight(path)  # the first read: its peak memory (the parallel kernels load too)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
csr = ds.data.nbytes + ds.indices.nbytes + ds.indptr.nbytes
arrays = sum(a.nbytes for a in (ds.data, ds.indices, ds.indptr, ds.y, ds.qid, ds.qptr, ds.line) if a is not None)
del ds
times = []
for _ in range(repeat):
    t = time.perf_counter(); ds = read_svmlight(path); times.append(time.perf_counter() - t)
    del ds
print(json.dumps({"seconds": min(times), "peak_extra": peak, "csr": csr, "arrays": arrays}))
"""


def bench_reader(rep: Report, peers, repeat, tmp):
    """The reader inside one process: MB/s on 2 threads, peak memory against the CSR arrays; and
    rankkit's sklearn-compatible loader against scikit-learn's."""
    path = generated("letor200k")
    tiny = Path(tmp) / "tiny.txt"
    tiny.write_text("1 qid:1 1:0.5 2:1\n0 qid:1 1:0.25\n")
    mb = path.stat().st_size / 1e6
    rep.add("### Reader inside one process (no start cost)\n",
            f"`rankkit.io.svmlight.read_svmlight` on {path.name} ({mb:.0f} MB), kernels loaded first; peak memory is the "
            "process's peak RSS growth during the reads.\n",
            "| threads | seconds | MB/s | peak growth MB | CSR arrays MB (data, indices, indptr) | all arrays MB |",
            "|---:|---:|---:|---:|---:|---:|")
    out = {}
    for th in (1, 2):
        proc = subprocess.run([sys.executable, "-c", READER_PROBE, str(path), str(tiny), str(th), str(repeat)],
                              check=True, capture_output=True, text=True, env=_env())
        r = json.loads(proc.stdout)
        out[th] = r
        rep.add(f"| {th} | {r['seconds']:.3f} | {mb / r['seconds']:.0f} | {r['peak_extra'] / 1e6:.0f} | "
                f"{r['csr'] / 1e6:.0f} | {r['arrays'] / 1e6:.0f} |")
    rep.add("")
    rep.rows.append(("reader in-process, 2 threads", f"{mb / out[2]['seconds']:.0f} MB/s, peak +{out[2]['peak_extra'] / 1e6:.0f} MB "
                     f"(CSR {out[2]['csr'] / 1e6:.0f} MB)", "goal >= 300 MB/s, CSR + bounded buffer", "-"))
    rep.data["reader"] = out
    # rankkit's sklearn-signature loader vs scikit-learn's
    try:
        from sklearn.datasets import load_svmlight_file as sk_load
    except ImportError:
        rep.add("scikit-learn is not installed (`pip install -e '.[bench]'`): loader comparison skipped.\n")
        return
    # rankkit.load_svmlight_file (the Python API, issue 12); the reader itself for an older rankkit.
    try:
        from rankkit import load_svmlight_file as rk_load  # noqa: F401
        rk_name = "rankkit.load_svmlight_file(f, query_id=True)"

        def rk_read():
            return rk_load(str(path), query_id=True)
    except ImportError:
        from rankkit.io.svmlight import read_svmlight

        rk_name = "rankkit.io.svmlight.read_svmlight(f) (rankkit.load_svmlight_file not there yet)"

        def rk_read():
            return read_svmlight(str(path))
    rk_read()

    def t_best(fn):
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return min(ts)

    t_rk = t_best(rk_read)
    t_sk = t_best(lambda: sk_load(str(path), query_id=True))
    rep.add(f"In this process ({len(os.sched_getaffinity(0))} threads): {rk_name} {t_rk:.3f} s, "
            f"sklearn.datasets.load_svmlight_file(f, query_id=True) {t_sk:.3f} s: rankkit {t_sk / t_rk:.1f}x faster.\n")
    rep.data["loader"] = {"rankkit": t_rk, "sklearn": t_sk}


def bench_folds(rep: Report, peers, repeat, tmp):
    """5 folds x 1 C of MQ2008 in one rankkit process vs 5 separate liblinear-ranksvm runs."""
    root = SHARED / "MQ2008"
    if not (root / "Fold1" / "train.txt").exists():
        rep.add("### Folds: MQ2008 not found under ../shared/data: skipped\n")
        return
    rk = best([rankkit_cmd("path", "--folds", root, "-C", "1e-3", "--out-dir", f"{tmp}/folds")], repeat)
    ll = None
    if peers["liblinear"]:
        runs = []
        for _ in range(repeat):
            total = 0.0
            for k in range(1, 6):
                total += timed([[peers["liblinear"], "-s", "8", "-c", "0.001", str(root / f"Fold{k}" / "train.txt"),
                                 f"{tmp}/ll{k}.model"]])[0]
            runs.append(total)
        ll = min(runs)
    rep.add("### Five MQ2008 folds at one C, one command\n",
            "- rankkit: `rankkit path --folds MQ2008 -C 1e-3 --out-dir D` (5 models, each scored on vali and test)",
            "- liblinear-ranksvm: `train -s 8 -c 0.001 FoldK/train.txt MODEL`, K = 1..5, one after the other (training only)\n",
            f"rankkit {rk[0]:.2f} s" + (f", liblinear-ranksvm {ll:.2f} s: **{rk[0] / ll:.2f}x** (goal <= 3x)\n" if ll else
                                        ", liblinear-ranksvm not found\n"))
    rep.rows.append(("5 MQ2008 folds x 1 C, one command", f"{rk[0]:.2f} s", f"5 liblinear-ranksvm runs {ll:.2f} s" if ll
                     else "liblinear-ranksvm: not found", ratio(rk[0], ll)))
    rep.data["folds"] = {"rankkit": rk, "liblinear": ll}


def bench_experiment(rep: Report, peers, repeat, tmp):
    """Issue 22's goal: MQ2008, 5 folds x a 10-point C grid (50 Newton fits, each scored on vali, then
    the chosen models on test) in one `rankkit experiment`, against liblinear-ranksvm's 50 separate
    `train -s 8` runs at the same values of C plus 5 `predict` runs on test. Two grids: the default
    span (C_min up by 1e7, as rankkit path: up to C ~ 40, where every solver needs its most
    iterations) and five decades (up to C ~ 0.4; every fold's choice lies below 0.3)."""
    root = SHARED / "MQ2008"
    if not (root / "Fold1" / "train.txt").exists():
        rep.add("### Experiment: MQ2008 not found under ../shared/data: skipped\n")
        return
    for ratio_ in ("1e7", "1e5"):
        _bench_experiment(rep, peers, repeat, tmp, root, ratio_)


EXPERIMENT_PROBE = r"""
import json, resource, sys, time
from rankkit.solvers import newton
counts = {"hess_vec": 0, "hess_matrix": 0, "hess_diag": 0, "start": 0, "linesearch_and_update": 0}
for name in counts:
    real = getattr(newton.LocalObjective, name)
    def counted(self, *a, _real=real, _name=name):
        counts[_name] += 1
        return _real(self, *a)
    setattr(newton.LocalObjective, name, counted)
from rankkit.experiments import experiment
t = time.process_time()
experiment(sys.argv[1], ["newton"], ["map"], n_points=10, ratio=float(sys.argv[2]), out_dir=sys.argv[3], resume=False)
print(json.dumps({"cpu": time.process_time() - t, **counts}))
"""


def _bench_experiment(rep: Report, peers, repeat, tmp, root, ratio_):
    out = Path(tmp) / f"experiment{ratio_}"
    cmd = rankkit_cmd("experiment", root, "--solver", "newton", "-m", "map", "--n-points", "10", "--ratio", ratio_,
                      "--out-dir", out, "--no-resume")
    rk = best([cmd], repeat)
    results = json.loads((out / "results.json").read_text())
    grids, chosen = {}, {}
    for k in range(1, 6):  # the same values of C, read back from the experiment's vali tables
        rows = [line.split("\t") for line in (out / f"Fold{k}" / "newton.vali.tsv").read_text().splitlines()]
        col = rows[0].index("C")
        grids[k] = [r[col] for r in rows[1:]]
        chosen[k] = repr(results["solvers"][0]["folds"][k - 1]["chosen"]["C"])
    ll = ll_cpu = None
    if peers["liblinear"] and peers.get("liblinear_predict"):
        runs = []
        for _ in range(repeat):
            total = cpu = 0.0
            for k in range(1, 6):
                fold = root / f"Fold{k}"
                for i, C in enumerate(grids[k]):
                    r = timed([[peers["liblinear"], "-s", "8", "-c", C, str(fold / "train.txt"),
                                f"{tmp}/ll{k}.{i}.model"]])
                    total, cpu = total + r[0], cpu + r[1]
                i = grids[k].index(chosen[k])
                r = timed([[peers["liblinear_predict"], str(fold / "test.txt"), f"{tmp}/ll{k}.{i}.model",
                            f"{tmp}/ll{k}.scores"]])
                total, cpu = total + r[0], cpu + r[1]
            runs.append((total, cpu))
        ll, ll_cpu = min(runs)
    mean = results["solvers"][0]["mean"]["test"]["map"]
    probe = subprocess.run([sys.executable, "-c", EXPERIMENT_PROBE, str(root), ratio_, str(Path(tmp) / f"probe{ratio_}")],
                           check=True, capture_output=True, text=True, env=_env())
    work = json.loads(probe.stdout.strip().splitlines()[-1])
    rep.add(f"### The LETOR protocol in one command: MQ2008, 5 folds x 10 values of C (--ratio {ratio_})\n",
            f"- rankkit: `rankkit experiment MQ2008 --solver newton -m map --n-points 10 --ratio {ratio_} --out-dir D "
            "--no-resume` "
            "(50 warm-started Newton fits, each scored on vali; the chosen model of each fold written and scored "
            f"on test; mean test MAP {mean:.4f})",
            "- liblinear-ranksvm: `train -s 8 -c C FoldK/train.txt MODEL` at the same 10 values of C per fold (50 "
            "runs, one after the other), then `predict FoldK/test.txt MODEL OUT` with each fold's chosen C (5 runs); "
            "no validation scoring\n",
            f"rankkit {rk[0]:.2f} s wall, {rk[1]:.2f} s CPU ({rk[2]:.0f} MB peak)" + (
                f"; liblinear-ranksvm {ll:.2f} s wall, {ll_cpu:.2f} s CPU: **{rk[0] / ll:.2f}x** the wall time "
                f"(goal <= 0.5x), {rk[1] / ll_cpu:.2f}x the CPU time\n" if ll else
                ", liblinear-ranksvm (train and predict) not found\n"),
            f"The same experiment in one process, counted (load-proof): {work['hess_vec']:,} Hessian-vector products, "
            f"{work['hess_matrix']} d x d Hessians built, {work['hess_diag']} diagonals, {work['start']} fits, "
            f"{work['linesearch_and_update']} Newton steps; {work['cpu']:.2f} s CPU (reading and writing included).\n")
    rep.rows.append((f"experiment: 5 MQ2008 folds x 10 C (ratio {ratio_})", f"{rk[0]:.2f} s",
                     f"50 liblinear-ranksvm trains + 5 predicts {ll:.2f} s" if ll else "liblinear-ranksvm: not found",
                     ratio(rk[0], ll)))
    rep.data["experiment" + ratio_] = {"rankkit": rk, "liblinear": ll, "liblinear_cpu": ll_cpu, "mean_test_map": mean,
                                       "work": work}


BUSY_LOOP = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 600: pass\n"


def bench_busy(rep: Report, peers, repeat, tmp):
    """`path --folds MQ2008 --jobs 2` (30 values of C per fold) idle, then with 1 and 2 other
    CPU-bound processes running: the thread policy's goal is within 1.5x of idle."""
    root = SHARED / "MQ2008"
    if not (root / "Fold1" / "train.txt").exists():
        rep.add("### Busy machine: MQ2008 not found under ../shared/data: skipped\n")
        return
    cmd = rankkit_cmd("path", "--folds", root, "--jobs", "2")
    times = {0: best([cmd], 1)[0]}
    for hogs in (1, 2):
        procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(hogs)]
        try:
            time.sleep(0.5)
            times[hogs] = best([cmd], 1)[0]
        finally:
            for p in procs:
                p.kill()
                p.wait()
    rep.add("### `path --folds --jobs 2` on a busy machine\n",
            "`rankkit path --folds MQ2008 --jobs 2` (5 folds, 30 values of C each), alone and with 1 or 2 other "
            "processes spinning on the CPU (`python -c 'while True: pass'`, started first). On 2 cores, 2 such "
            "processes leave rankkit half the machine.\n",
            "| other busy processes | wall s | / idle |", "|---:|---:|---:|",
            *[f"| {h} | {t:.2f} | {t / times[0]:.2f}x |" for h, t in times.items()], "")
    rep.rows.append(("`path --folds MQ2008 --jobs 2`, 1 / 2 busy processes vs idle", f"{times[1]:.2f} / {times[2]:.2f} s",
                     f"idle {times[0]:.2f} s", f"{times[1] / times[0]:.2f}x / {times[2] / times[0]:.2f}x"))
    rep.data["busy"] = times


def bench_cold(rep: Report, peers, repeat, tmp):
    """The first runs on a fresh install: every kernel compiled into an empty numba cache; then the
    ahead-of-time build (`python -m rankkit.warmup`, what `make` runs before `make demo`) into
    another empty cache, its wall and CPU seconds (CPU: the sum over its processes, the measure
    that a busy machine disturbs least), and the demo's commands after it, which must compile
    nothing and never import numba."""
    data = ROOT / "data"
    env = dict(_env())

    def wall(cmd, cache) -> float:
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=dict(env, NUMBA_CACHE_DIR=cache), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        return time.perf_counter() - t

    cache = tempfile.mkdtemp(prefix="cold-", dir=tmp)
    model, scores = f"{tmp}/cold.model", f"{tmp}/cold.scores"
    first = {"train": wall(rankkit_cmd("train", data / "sample.train.txt", model, "-C", "0.01"), cache),
             "predict": wall(rankkit_cmd("predict", data / "sample.test.txt", model, scores), cache),
             "eval": wall(rankkit_cmd("eval", data / "sample.test.txt", scores), cache)}
    builds = []
    for _ in range(max(1, min(repeat, 2))):
        cache = tempfile.mkdtemp(prefix="warm-", dir=tmp)
        saved = os.environ.get("NUMBA_CACHE_DIR")
        os.environ["NUMBA_CACHE_DIR"] = cache
        try:
            w, cpu, _ = timed([[sys.executable, "-m", "rankkit.warmup", "-q"]])
        finally:
            if saved is None:
                os.environ.pop("NUMBA_CACHE_DIR", None)
            else:
                os.environ["NUMBA_CACHE_DIR"] = saved
        builds.append((w, cpu))
    warmup, warmup_cpu = min(builds)
    demo = [rankkit_cmd("train", data / "sample.train.txt", model, "-C", "0.01", "-v"),
            rankkit_cmd("predict", data / "sample.test.txt", model, scores),
            rankkit_cmd("eval", data / "sample.test.txt", scores)]
    after, compiled = 0.0, []
    for c in demo:
        t = time.perf_counter()
        p = subprocess.run([c[0], "-X", "importtime", *c[1:]], env=dict(env, NUMBA_CACHE_DIR=cache),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
        after += time.perf_counter() - t
        if "compiling kernels" in p.stderr or any(line.split("|")[-1].strip() == "numba"
                                                   for line in p.stderr.splitlines() if line.startswith("import time:")):
            compiled.append(shlex.join(c[2:4]))
    from rankkit.compiler import table

    rep.add("### Cold start: the first runs, every kernel compiled into an empty cache\n",
            "Each command run once, in order, on the bundled sample with a fresh `NUMBA_CACHE_DIR`; then "
            "`python -m rankkit.warmup` (what `make warmup` runs; `make demo` builds its first commands' calls first, "
            "then the rest: every kernel call of every "
            f"solver, loss, sampler, metric and the Dask worker path, {len(table.CALLS)} calls, compiled ahead "
            "of time, one process per core) into another empty cache (best of "
            f"{len(builds)}), and the demo's three commands after it.\n",
            "| run | wall s | CPU s |", "|---|---:|---:|",
            f"| first `rankkit train data/sample.train.txt M -C 0.01` (reader and Newton kernels) | {first['train']:.2f} | |",
            f"| then first `rankkit predict` (scoring) | {first['predict']:.2f} | |",
            f"| then first `rankkit eval` (metrics kernel) | {first['eval']:.2f} | |",
            f"| **the three, cold** | **{sum(first.values()):.2f}** | |",
            f"| `python -m rankkit.warmup` (empty cache) | {warmup:.2f} | {warmup_cpu:.2f} |",
            f"| the three commands after it (`train -v`, `predict`, `eval`) | {after:.2f} | |", "",
            "After the build: " + ("nothing compiled, numba never imported." if not compiled else
                                   f"**compiled or imported numba: {', '.join(compiled)}**"), "")
    rep.rows.append(("fresh clone to first model: `python -m rankkit.warmup` (all kernels), then the demo",
                     f"build {warmup:.2f} s wall, {warmup_cpu:.2f} s CPU; demo {after:.2f} s, "
                     + ("no compile" if not compiled else "COMPILED"), "-", "-"))
    rep.data["cold"] = {"first": first, "warmup": warmup, "warmup_cpu": warmup_cpu, "builds": builds,
                        "after_warmup": after, "compiled_after_warmup": compiled}


# -- issue 27: raw features, hinge, AUC at scale -------------------------------------------------
OBJECTIVE_PROBE = r"""
import json, sys
import numpy as np
from rankkit.io.foreign_models import load_model
from rankkit.io.svmlight import read_svmlight
from rankkit.objectives.pairwise import PairwiseObjective
data, C, loss = sys.argv[1], float(sys.argv[2]), sys.argv[3]
ds = read_svmlight(data)
out = {}
for path in sys.argv[4:]:
    m = load_model(path)
    w = np.zeros(ds.n_features)
    k = min(ds.n_features, m.weights.shape[0])
    w[:k] = m.weights[:k]
    obj = PairwiseObjective(ds, C, loss)
    out[path] = obj.evaluate(w, obj.scores(w))
print(json.dumps(out))
"""


def objectives(data, C: float, loss: str, models: list) -> dict:
    """The exact objective 0.5||w||^2 + C * sum_pairs loss of each model file (rankkit's or a peer's)."""
    proc = subprocess.run([sys.executable, "-c", OBJECTIVE_PROBE, str(data), repr(float(C)), loss, *map(str, models)],
                          check=True, capture_output=True, text=True, env=_env())
    return json.loads(proc.stdout)


def model_field(path, name: str) -> str | None:
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith(name + " "):
            return line.split(None, 1)[1].strip()
        if line.startswith("weights"):
            return None
    return None


MSLR_OPTIMUM = 4951.19087  # the MSLR sample at C = 1 (issue 27: today's solver at --tol 1e-14, 193 iterations)


def bench_raw(rep: Report, peers, repeat, tmp):
    """MSLR sample (raw features) at C = 1: rankkit's default run against the optimum, and liblinear."""
    path = SHARED / "MSLR-WEB-sample" / "search_tiny_train.txt"
    if not path.exists():
        rep.add("### Raw features: the MSLR sample is not under ../shared/data: skipped\n")
        return
    model = f"{tmp}/raw.model"
    subprocess.run(rankkit_cmd("train", path, model, "-C", "1"), check=True, env=_env(), stdout=subprocess.DEVNULL)
    rk = best([rankkit_cmd("train", path, model, "-C", "1")], repeat)
    ll = best([[peers["liblinear"], "-s", "8", "-c", "1", str(path), f"{tmp}/rawll.model"]], repeat) \
        if peers["liblinear"] else None
    objs = objectives(path, 1.0, "squared-hinge", [model] + ([f"{tmp}/rawll.model"] if ll else []))
    f_rk = objs[model]
    f_ll = objs.get(f"{tmp}/rawll.model")
    t_fit = float(model_field(model, "train_time_seconds") or "nan")
    its, cg = model_field(model, "iterations"), model_field(model, "cg_iterations")
    stages = _train_stages(path, "1")
    rep.passes.append(("MSLR sample (582 docs, raw), C=1", stages))
    rep.add("### Raw features: the MSLR sample (582 docs, 136 raw features), C = 1, default options\n",
            f"- rankkit: `rankkit train search_tiny_train.txt MODEL -C 1` ({its} Newton iterations, {cg} CG steps)",
            "- liblinear-ranksvm: `train -s 8 -c 1 search_tiny_train.txt MODEL`",
            f"- objective 0.5||w||^2 + C sum squared hinge of each model computed by rankkit on the file; the optimum "
            f"is {MSLR_OPTIMUM} (issue 27)\n",
            f"- in passes over the data (one process, kernels loaded): {passes_text(stages)}\n",
            "| program | wall s | fit s (in the model) | objective | (f - f*) / f* |", "|---|---:|---:|---:|---:|",
            f"| rankkit | {rk[0]:.2f} | {t_fit:.3f} | {f_rk:.5f} | {(f_rk - MSLR_OPTIMUM) / MSLR_OPTIMUM:.1e} |")
    if ll:
        rep.add(f"| liblinear-ranksvm | {ll[0]:.2f} | - | {f_ll:.5f} | {(f_ll - MSLR_OPTIMUM) / MSLR_OPTIMUM:.1e} |")
    rep.add("")
    rep.rows.append(("MSLR sample, raw features, C=1 (goal <= 0.5 s at 1e-7 of the optimum)",
                     f"{rk[0]:.2f} s wall, fit {t_fit:.3f} s, objective {f_rk:.5f} "
                     f"({(f_rk - MSLR_OPTIMUM) / MSLR_OPTIMUM:.1e})",
                     f"liblinear-ranksvm {ll[0]:.2f} s, objective {f_ll:.1f}" if ll else "liblinear-ranksvm: not found",
                     ratio(rk[0], ll and ll[0])))
    rep.data["raw"] = {"rankkit": rk, "liblinear": ll, "objective": f_rk, "liblinear_objective": f_ll, "fit": t_fit}


def bench_mslr30k(rep: Report, peers, repeat, tmp):
    """MSLR-WEB30K-shaped synthetic (500k docs x 136 raw features) at C = 1 vs liblinear-ranksvm."""
    path = generated("mslr30k")
    mb = path.stat().st_size / 1e6
    model, llmodel = f"{tmp}/m30.model", f"{tmp}/m30ll.model"
    rk = best([rankkit_cmd("train", path, model, "-C", "1")], repeat)
    ll = best([[peers["liblinear"], "-s", "8", "-c", "1", str(path), llmodel]], repeat) if peers["liblinear"] else None
    objs = objectives(path, 1.0, "squared-hinge", [model] + ([llmodel] if ll else []))
    t_fit = float(model_field(model, "train_time_seconds") or "nan")
    t_read = float(model_field(model, "read_time_seconds") or "nan")
    its, cg = model_field(model, "iterations"), model_field(model, "cg_iterations")
    stages = _train_stages(path, "1")
    rep.passes.append((f"MSLR-WEB30K-shaped {mb:.0f} MB, raw, C=1", stages))
    rep.add(f"### MSLR-WEB30K-shaped synthetic, raw features, C = 1\n",
            f"File {path.name}, {mb:.0f} MB, made by {generator_text('mslr30k')}.\n",
            f"- rankkit: `rankkit train {path.name} MODEL -C 1` ({its} Newton iterations, {cg} CG steps; "
            f"reading {t_read:.1f} s, fit {t_fit:.1f} s)",
            f"- liblinear-ranksvm: `train -s 8 -c 1 {path.name} MODEL`",
            f"- in passes over the data (one process, kernels loaded): {passes_text(stages)}\n",
            "| program | wall s | CPU s | peak MB | objective |", "|---|---:|---:|---:|---:|",
            f"| rankkit | {rk[0]:.2f} | {rk[1]:.2f} | {rk[2]:.0f} | {objs[model]:.10g} |")
    if ll:
        rep.add(f"| liblinear-ranksvm | {ll[0]:.2f} | {ll[1]:.2f} | {ll[2]:.0f} | {objs[llmodel]:.10g} |",
                f"| **ratio** | **{ratio(rk[0], ll[0])}** | {ratio(rk[1], ll[1])} | **{ratio(rk[2], ll[2])}** | |")
    rep.add("")
    rep.rows.append((f"MSLR-WEB30K-shaped {mb:.0f} MB, raw, C=1 (goal <= 0.6x time, <= 0.7x memory)",
                     f"{rk[0]:.2f} s, {rk[2]:.0f} MB, objective {objs[model]:.6g}",
                     f"liblinear-ranksvm {ll[0]:.2f} s, {ll[2]:.0f} MB, objective {objs[llmodel]:.6g}" if ll
                     else "liblinear-ranksvm: not found",
                     f"{ratio(rk[0], ll and ll[0])} time, {ratio(rk[2], ll and ll[2])} memory" if ll else "-"))
    rep.data["mslr30k"] = {"rankkit": rk, "liblinear": ll, "objectives": objs, "fit": t_fit, "read": t_read}


def n_queries(path) -> int:
    from rankkit.io.svmlight import read_svmlight

    return read_svmlight(str(path)).n_queries


def bench_hinge(rep: Report, peers, repeat, tmp):
    """The hinge loss (solver bundle) against svm_rank at svm_rank's -c 1, the same objective: wall
    and CPU seconds (CPU: what a busy machine does not inflate much), iterations, loss evaluations."""
    files = []
    mq = SHARED / "MQ2008" / "Fold1" / "train.txt"
    if mq.exists():
        files.append(("MQ2008 Fold1 train (9,630 docs)", mq))
    files.append(("the 200k file", generated("letor200k")))
    for what, path in files:
        nq = n_queries(path)
        c_svm = 1.0
        C = c_svm / nq  # svm_rank's -c weights the hinge loss divided by the number of queries
        model, smodel = f"{tmp}/h.model", f"{tmp}/h.svmrank"
        args = ("train", path, model, "--loss", "hinge", "-C", repr(C))
        subprocess.run(rankkit_cmd(*args), check=True, env=_env(), stdout=subprocess.DEVNULL)
        load = load_now()
        rk = best([rankkit_cmd(*args)], repeat)
        sr = best([[peers["svm_rank"], "-c", repr(c_svm), str(path), smodel]], repeat) if peers["svm_rank"] else None
        # the same run stopped at a relative duality gap of 1e-3 (svm_rank's default -e 0.001 stops
        # at a comparable objective): the time to svm_rank's objective, the objectives printed
        lmodel = f"{tmp}/h3.model"
        rk3 = best([rankkit_cmd(*args[:2], lmodel, *args[3:], "--tol", "1e-3")], repeat)
        objs = objectives(path, C, "hinge", [model, lmodel] + ([smodel] if sr else []))
        its, its3 = model_field(model, "iterations"), model_field(lmodel, "iterations")
        ev, ev3 = model_field(model, "loss_evaluations"), model_field(lmodel, "loss_evaluations")
        gap = model_field(model, "duality_gap")
        rep.add(f"### Hinge loss, {what}: rankkit `--loss hinge` (bundle) vs svm_rank `-c 1`\n",
                f"- rankkit: `rankkit train {path.name} MODEL --loss hinge -C {C!r}` (C = 1 / {nq} queries; {its} "
                f"iterations, {ev} loss evaluations, duality gap {gap})",
                f"- svm_rank: `svm_rank_learn -c 1 {path.name} MODEL`",
                "- objective 0.5||w||^2 + C sum_pairs hinge of each model, computed by rankkit on the file",
                f"- best of {repeat}; load average {load} when the runs started\n",
                "| program | wall s | CPU s | peak MB | objective |", "|---|---:|---:|---:|---:|",
                f"| rankkit (default --tol 1e-4, {its} iterations, {ev} loss evaluations) | {rk[0]:.2f} | {rk[1]:.2f} | "
                f"{rk[2]:.0f} | {objs[model]:.8g} |",
                f"| rankkit --tol 1e-3 ({its3} iterations, {ev3} loss evaluations) | {rk3[0]:.2f} | {rk3[1]:.2f} | "
                f"{rk3[2]:.0f} | {objs[lmodel]:.8g} |")
        if sr:
            rep.add(f"| svm_rank | {sr[0]:.2f} | {sr[1]:.2f} | {sr[2]:.0f} | {objs[smodel]:.8g} |",
                    f"| **ratio rankkit / svm_rank** | **{ratio(rk[0], sr[0])}** (--tol 1e-3: {ratio(rk3[0], sr[0])}) | "
                    f"{ratio(rk[1], sr[1])} (--tol 1e-3: {ratio(rk3[1], sr[1])}) | {ratio(rk[2], sr[2])} | |")
        else:
            rep.add("| svm_rank | not found (set RANKKIT_PEERS or RANKKIT_SVMRANK) | | | |")
        rep.add("")
        rep.rows.append((f"hinge, {what} (goal <= 0.8x / <= 0.5x at the same objective)",
                         f"{rk[0]:.2f} s ({rk[1]:.2f} s CPU), objective {objs[model]:.8g}; --tol 1e-3 {rk3[0]:.2f} s, "
                         f"{objs[lmodel]:.8g}",
                         f"svm_rank {sr[0]:.2f} s ({sr[1]:.2f} s CPU), objective {objs[smodel]:.8g}" if sr
                         else "svm_rank: not found",
                         f"{ratio(rk[0], sr and sr[0])} (--tol 1e-3: {ratio(rk3[0], sr and sr[0])}; CPU "
                         f"{ratio(rk[1], sr and sr[1])})"))
        rep.data.setdefault("hinge", {})[str(path)] = {"rankkit": rk, "rankkit_tol1e-3": rk3, "svm_rank": sr,
                                                      "objectives": objs, "load": load, "iterations": its,
                                                      "loss_evaluations": ev}


AUC_PROBE = r"""
import json, resource, sys, time
import numpy as np
from rankkit.data import Dataset
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers.newton import LocalObjective, truncated_newton

def rcv1_like(n, d=47_236, per_row=75, seed=0):
    rng = np.random.default_rng(seed)
    p = 1.0 / (np.arange(d) + 10.0)
    p /= p.sum()
    cols = rng.choice(d, size=(n, per_row), p=p)
    cols.sort(axis=1)
    keep = np.ones_like(cols, dtype=bool)
    keep[:, 1:] = cols[:, 1:] != cols[:, :-1]
    vals = rng.random(cols.shape) * keep
    vals /= np.sqrt((vals ** 2).sum(axis=1, keepdims=True))
    indptr = np.concatenate([[0], np.cumsum(keep.sum(1))]).astype(np.int64)
    data, indices = vals[keep], cols[keep].astype(np.int32)
    w_true = np.random.default_rng(99).standard_normal(d) * (np.random.default_rng(98).random(d) < 0.1)
    s = np.zeros(n)
    np.add.at(s, np.repeat(np.arange(n), np.diff(indptr)), data * w_true[indices])
    y = (s + rng.standard_normal(n) * 0.3 * s.std() > np.quantile(s, 0.53)).astype(np.float64)
    return Dataset(data=data, indices=indices, indptr=indptr, y=y, qid=np.zeros(n, dtype=np.int64),
                   qptr=np.array([0, n], dtype=np.int64), n_features=d, has_qid=False).validate()

C = float(sys.argv[1]); modes = sys.argv[2].split(","); ns = [int(v) for v in sys.argv[3].split(",")]
repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 1

def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime

out = []
ds0 = rcv1_like(600)
truncated_newton(LocalObjective(PairwiseObjective(ds0, C), ds0), max_iter=2)
for n in ns:
    ds = rcv1_like(n)
    for mode in modes:
        best = None
        for _ in range(repeat):  # best of `repeat` by wall time; CPU seconds of that run (all threads)
            t, c = time.perf_counter(), cpu()
            r = truncated_newton(LocalObjective(PairwiseObjective(ds, C), ds), precondition=mode)
            run = (time.perf_counter() - t, cpu() - c)
            best = run if best is None or run[0] < best[0] else best
        out.append({"n": n, "mode": mode, "seconds": best[0], "cpu": best[1], "iterations": r.iterations,
                    "cg": r.extra["cg_iterations"], "objective": r.objective, "converged": r.converged})
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
print(json.dumps(out))
"""
AUC_SIZES = (1200, 2400, 4800, 9600, 19200, 38400)


def bench_auc(rep: Report, peers, repeat, tmp):
    """AUC at scale: one RCV1-like sparse query (47,236 features, Zipf column frequencies, unit rows,
    ~75 non-zeros a row), n = 1.2k..38.4k at fixed C = 0.005: total fit time against n, in-process."""
    C = 0.005
    modes = ("none", "auto")
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-c", AUC_PROBE, repr(C), ",".join(modes), ",".join(map(str, AUC_SIZES)),
                           str(max(1, repeat))], check=True, capture_output=True, text=True, env=_env())
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    import math

    def slope(mode, key="seconds"):
        pts = [(math.log(r["n"]), math.log(r[key])) for r in rows if r["mode"] == mode]
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)

    def cg_slope(mode):  # CG steps against n: load-proof (each step is O(nnz + n log n))
        pts = [(math.log(r["n"]), math.log(r["cg"])) for r in rows if r["mode"] == mode]
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)

    rep.add(f"### AUC at scale: one RCV1-like sparse query, C = {C}, n = {AUC_SIZES[0]:,}..{AUC_SIZES[-1]:,}\n",
            "In one process (kernels loaded first), `truncated_newton` with `precondition` none (plain CG) and auto "
            "(the default); the generator is `rcv1_like` in scripts/bench_peers.py's AUC_PROBE. Best of "
            f"{max(1, repeat)} by wall time (CPU: that run's process CPU seconds, every thread); load average "
            f"{load:.2f} at the start.\n",
            "| n | preconditioner | fit s | CPU s | Newton iterations | CG steps | objective |",
            "|---:|---|---:|---:|---:|---:|---:|",
            *[f"| {r['n']:,} | {r['mode']} | {r['seconds']:.3f} | {r['cpu']:.3f} | {r['iterations']} | {r['cg']} | "
              f"{r['objective']:.8g} |" for r in rows],
            "", "Slope of log fit time against log n: " + ", ".join(f"{m} **{slope(m):.2f}**" for m in modes) +
            "; of log CPU seconds: " + ", ".join(f"{m} {slope(m, 'cpu'):.2f}" for m in modes) +
            "; of log CG steps against log n (load-proof): " + ", ".join(f"{m} {cg_slope(m):.2f}" for m in modes) +
            ".\n")
    rep.rows.append((f"AUC, RCV1-like sparse query, n = 1.2k..38.4k, C={C} (goal: exponent <= 1.2)",
                     f"time ~ n^{slope('auto'):.2f} (plain CG n^{slope('none'):.2f})", "-", "-"))
    rep.data["auc"] = rows


SECTIONS = {"train": bench_train_big, "concurrent": bench_concurrent, "pegasos": bench_pegasos,
            "small": bench_small, "folds": bench_folds, "busy": bench_busy, "cold": bench_cold,
            "reader": bench_reader, "experiment": bench_experiment, "raw": bench_raw, "mslr30k": bench_mslr30k,
            "hinge": bench_hinge, "auc": bench_auc}


def kernels_used() -> str:
    """Which compiled code the rankkit runs above used (the environment they ran in)."""
    from rankkit.compiler import aot

    st = aot.status()
    if st["dir"] is None:
        return "numba's JIT cache (no ahead-of-time build for this source: run `make warmup`)"
    return f"compiled ahead of time (`make warmup`: {st['kernels']} kernels in {st['dir']}; runs they cover do not load numba)"


def render(rep: Report, args, peers) -> str:
    head = [f"## rankkit against the C tools, side by side ({dt.datetime.now().strftime('%Y-%m-%d %H:%M')})\n",
            f"Machine: {machine()}. Load average when the run started: {rep.data.get('load', '?')} "
            "(figures from a busy machine are not comparable; the ratios hold better than the times).\n",
            f"Command: `{shlex.join(['python', 'scripts/bench_peers.py', *sys.argv[1:]])}`; best of {args.repeat} runs each. "
            "Peers: " + ", ".join(f"{k} {v or 'not found'}" for k, v in peers.items()) + ".\n",
            f"Kernels: {kernels_used()}.\n"]
    summary = ["| run | rankkit | peer | ratio |", "|---|---|---|---|"]
    summary += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rep.rows]
    if rep.passes:  # issue 39: how far each Newton fit is from the floor of a few dozen passes
        summary += ["", "The Newton fits in passes over the data: the fit's time (`rankkit train`'s fit, in one process, "
                    "kernels loaded) divided by the median time of one product X.v on the same matrix, measured in the "
                    "same process right after it; Hessian-vector products counted in the fit (each is one X.v and one "
                    "X'z, so a fit costs at least twice as many passes).\n",
                    "| run | fit s | X.v ms | passes | Hessian-vector products | Newton steps |",
                    "|---|---:|---:|---:|---:|---:|"]
        summary += [f"| {a} | {st['fit']:.3f} | {st['xv'] * 1e3:.2f} | {st['passes']:.0f} | {st['hv']} | {st['newton']} |"
                    for a, st in rep.passes]
    return "\n".join(head + summary + [""] + rep.lines)


def update(path: Path, text: str) -> None:
    old = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}\n"
    if BEGIN in old and END in old:
        a, b = old.index(BEGIN), old.index(END) + len(END)
        new = old[:a] + block.rstrip("\n") + old[b:]
    else:
        new = old.rstrip("\n") + "\n\n" + block
    path.write_text(new)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", help="folder of the peer builds [default: $RANKKIT_PEERS]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=list(SECTIONS), action="append")
    ap.add_argument("--update", metavar="FILE", help="replace the bench-peers block of FILE (e.g. BENCHMARKS.md)")
    args = ap.parse_args()
    peers = find_peers(args.peers)
    from rankkit.warmup import compile_bytecode

    compile_bytecode()  # as after `make`: no run compiles rankkit's modules from source (PYTHONDONTWRITEBYTECODE)
    from rankkit.compiler import aot
    from rankkit.compiler.table import CALLS

    if aot.enabled() and not aot.covers(CALLS):
        # without a build of these exact sources every rankkit run would import numba and load its
        # JIT cache: about 0.25 s and 100 MB more per process, figures no user of `make` sees
        print("bench-peers: no kernel build of these sources covers every kernel call: run `make warmup` "
              "(or `python -m rankkit.warmup`) first, or `make bench-peers`", file=sys.stderr)
        return 2
    rep = Report()
    rep.data["load"] = load_now()
    with tempfile.TemporaryDirectory(prefix="rankkit-bench-peers-") as tmp:
        for name in args.only or list(SECTIONS):
            print(f"[bench-peers] {name} ...", file=sys.stderr, flush=True)
            SECTIONS[name](rep, peers, args.repeat, tmp)
    text = render(rep, args, peers)
    print(text)
    (ROOT / "out").mkdir(exist_ok=True)
    (ROOT / "out" / "bench-peers.md").write_text(text + "\n")
    (ROOT / "out" / "bench-peers.json").write_text(json.dumps(rep.data, indent=1, default=str) + "\n")
    if args.update:
        update(Path(args.update), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
