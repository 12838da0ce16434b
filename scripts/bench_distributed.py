#!/usr/bin/env python3
"""Benchmark of rankkit.distributed: the Newton RankSVM on 8 parts, on a LocalCluster of worker
processes against one process, for the 200k-document file of scripts/bench.py
(make_synthetic.write_letor with its defaults) and a 1M-document file (write_letor with 10,000
queries); each cut into 8 parts of whole queries.

    python scripts/bench_distributed.py [--workers 2] [--sizes 200k,1m] [--C 1e-3] [--out FILE]
    python scripts/bench_distributed.py --collections [--sizes 200k] [--workers 2]

--collections: DaskRankSVM on a dask array against RankSVM.fit_parts on the same data, and
lightgbm.DaskLGBMRanker on the same cluster when lightgbm is importable (not a dependency): fit
time and the client's peak RSS; rewrites only that section of the report.

Then, on the 1M-document file, the command line in the same run: `rankkit train FILE`, `rankkit
train PARTS` (one process) and `rankkit train PARTS --dask local:2`: wall time and peak RSS.

Reports, per file: wall time (reading included), time per Newton iteration, rounds (f/g, Hv and
line-search steps: each one round trip to every part), bytes moved per iteration (numpy payloads
of the partial sums and of the points sent; Dask's own message framing not included), the part of
the rounds spent waiting on communication and scheduling, and the client's peak RSS (the client
process alone: worker processes are measured apart). Each configuration runs in a fresh process.
Writes a markdown section (default: BENCHMARKS-distributed.md) with the on-paper projection.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench-data"
sys.path.insert(0, str(ROOT / "scripts"))

import make_synthetic  # noqa: E402
from bench_peers import machine  # noqa: E402  (one description of the machine for every benchmark report)

SIZES = {"200k": dict(queries=2000, docs=100), "1m": dict(queries=10_000, docs=100)}
N_PARTS = 8

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.environ["RANKKIT_ROOT"])
mode, C, workers = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
files = sys.argv[4:]
t0 = time.perf_counter()
if mode == "one":
    from rankkit.distributed import fit_newton
    res, facts = fit_newton(files, None, C=C)  # as `rankkit train PARTS` (no --dask): the parts' sums in this process
    out = dict(read=facts["read_seconds"], fit=res.train_time, iterations=res.iterations, objective=res.objective,
               cg=res.extra["cg_iterations"], weights=res.w.tobytes().hex())
else:
    from distributed import Client, LocalCluster
    from rankkit.distributed import fit_newton
    from rankkit.parts import worker as W
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=50, memory_limit=0) as lc, Client(lc) as c:
        c.run(W.set_threads, max(1, (os.cpu_count() or 1) // workers))
        t_up = time.perf_counter() - t0
        t1 = time.perf_counter()
        res, facts = fit_newton(files, c, C=C)
        total = time.perf_counter() - t1
        worker_rss = c.run(lambda: __import__("resource").getrusage(__import__("resource").RUSAGE_SELF).ru_maxrss)
    out = dict(startup=t_up, total_fit_incl_read=total, fit=res.train_time, iterations=res.iterations,
               objective=res.objective, cg=res.extra["cg_iterations"], worker_rss_kb=sorted(worker_rss.values()),
               weights=res.w.tobytes().hex(), **facts)
out["wall"] = time.perf_counter() - t0
out["client_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("RESULT " + json.dumps(out))
"""


def ensure_parts(size: str) -> list[str]:
    """The file of `size` (generated once, as scripts/bench.py does) and its 8 parts of whole queries."""
    spec = SIZES[size]
    whole = BENCH / ("letor.txt" if size == "200k" else "letor1m.txt")  # letor.txt: scripts/bench.py's file
    if not whole.exists():
        BENCH.mkdir(parents=True, exist_ok=True)
        tmp = whole.with_suffix(".part")
        make_synthetic.write_letor(str(tmp), **({} if size == "200k" else spec))
        tmp.rename(whole)
    d = BENCH / f"parts-{size}"
    paths = [d / f"part-{k:02d}.txt" for k in range(N_PARTS)]
    if not all(p.exists() for p in paths):
        d.mkdir(parents=True, exist_ok=True)
        rows_per_part = spec["queries"] // N_PARTS * spec["docs"]  # every query has exactly `docs` rows
        with open(whole, "rb") as fh:
            for k, p in enumerate(paths):
                with open(p, "wb") as out:
                    n = rows_per_part if k < N_PARTS - 1 else None
                    for i, line in enumerate(fh):
                        out.write(line)
                        if n is not None and i + 1 == n:
                            break
    return [str(p) for p in paths]


MEASURE = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"rc": p.returncode, "wall": time.perf_counter() - t0, "stderr": p.stderr[-2000:],
                  "peak_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


COLLECTIONS = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.environ["RANKKIT_ROOT"])
mode, C, workers, rows_per_part = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
files = sys.argv[5:]
import numpy as np
from distributed import Client, LocalCluster
from rankkit.parts import worker as W

def peak_reset():
    # the client's resident set now (MB), its peak forgotten (Linux: clear_refs 5 resets VmHWM), so
    # that the peak read after the fit is the fit's own, not the cluster start's or the imports'
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return status("VmRSS")

def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0

def part_arrays(path):  # on a worker: the part as dense arrays (the client never holds them)
    from rankkit.datasets import load_svmlight_file
    X, y, q = load_svmlight_file(path, query_id=True)
    return X.toarray(), y, q

with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                  silence_logs=50, memory_limit=0) as lc, Client(lc) as c:
    c.run(W.set_threads, max(1, (os.cpu_count() or 1) // workers))
    base_rss = peak_reset()
    t0 = time.perf_counter()
    if mode == "fit_parts":
        import rankkit
        est = rankkit.RankSVM(C=C).fit_parts(files, client=c)
        out = dict(objective=est.objective_, iterations=est.n_iter_, coef=est.coef_.tolist())
    else:
        import dask, dask.array as da
        loaded = [dask.delayed(part_arrays)(f) for f in files]
        d = 46
        X = da.concatenate([da.from_delayed(p[0], shape=(rows_per_part, d), dtype=np.float64) for p in loaded])
        y = da.concatenate([da.from_delayed(p[1], shape=(rows_per_part,), dtype=np.float64) for p in loaded])
        q = da.concatenate([da.from_delayed(p[2], shape=(rows_per_part,), dtype=np.int64) for p in loaded])
        if mode == "dask_split":  # chunks that cut queries: their rows are joined on one worker
            n = X.shape[0]
            step = n // len(files) + 37
            chunks = tuple(min(step, n - i) for i in range(0, n, step))
            X, y, q = X.rechunk((chunks, -1)), y.rechunk((chunks,)), q.rechunk((chunks,))
        X, y, q = c.persist([X, y, q])  # the data on the workers before the clock starts
        from distributed import wait
        wait([X, y, q])
        base_rss = peak_reset()
        t0 = time.perf_counter()
        if mode == "lightgbm":
            import lightgbm as lgb
            sizes = q.map_blocks(lambda b: np.unique(b, return_counts=True)[1][np.argsort(np.unique(b, return_index=True)[1])],
                                 chunks=((np.nan,) * len(files),), dtype=np.int64)
            est = lgb.DaskLGBMRanker(client=c, n_estimators=100, verbose=-1).fit(X, y, group=sizes)
            out = dict(objective=None, iterations=100, coef=None)
        else:
            from rankkit.dask import DaskRankSVM
            est = DaskRankSVM(C=C, client=c).fit(X, y, qid=q)
            out = dict(objective=est.objective_, iterations=est.n_iter_, coef=est.coef_.tolist())
    out["fit"] = time.perf_counter() - t0
    out["client_peak_mb"] = status("VmHWM")  # the peak since peak_reset: during the fit
out["client_before_mb"] = base_rss
print("RESULT " + json.dumps(out))
"""


def collection_rows(size, C, workers) -> list:
    """DaskRankSVM on a dask array (built from the parts on the workers: the client never holds the
    data) against RankSVM.fit_parts on the same parts, on the same kind of cluster; and
    lightgbm.DaskLGBMRanker on the same dask array, when lightgbm is importable. Each in a fresh
    process: fit time and the client's peak RSS (the client process holds the LocalCluster's
    scheduler too, the same for every row)."""
    files = ensure_parts(size)
    rows_per_part = SIZES[size]["queries"] // N_PARTS * SIZES[size]["docs"]
    env = dict(os.environ, RANKKIT_ROOT=str(ROOT))
    rows = []
    modes = ["fit_parts", "dask", "dask_split"]
    try:
        import lightgbm  # noqa: F401 - only measured when present: not a dependency of rankkit
        modes.append("lightgbm")
    except ImportError:
        pass
    for mode in modes:
        proc = subprocess.run([sys.executable, "-c", COLLECTIONS, mode, repr(C), str(workers), str(rows_per_part),
                               *files], env=env, capture_output=True, text=True, timeout=3600)
        res = next((json.loads(ln[7:]) for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if res is None:
            raise SystemExit(f"benchmark child {mode} failed:\n{proc.stderr[-3000:]}")
        print("collections", size, mode, json.dumps({k: v for k, v in res.items() if k != "coef"}), flush=True)
        rows.append((mode, res))
    return rows


def collections_report(args, size, rows) -> str:
    labels = {"fit_parts": f"RankSVM.fit_parts({N_PARTS} part files, client=...)",
              "dask": f"DaskRankSVM.fit(dask array, {N_PARTS} chunks of whole queries)",
              "dask_split": f"DaskRankSVM.fit(dask array, {N_PARTS} chunks cutting queries)",
              "lightgbm": f"lightgbm.DaskLGBMRanker.fit(the same dask array, {N_PARTS} chunks; 100 trees)"}
    ref = np.asarray(rows[0][1]["coef"])
    lines = [
        "## DaskRankSVM on a dask array against fit_parts (and LightGBM's Dask ranker)\n",
        f"{dt.date.today().isoformat()}, {machine()}. `python scripts/bench_distributed.py --collections "
        f"--sizes {size} --workers {args.workers}` (C = {args.C:g}, tol 1e-6): the {size}-document synthetic file "
        f"of the table above, {N_PARTS} parts; each row a fresh process with a LocalCluster of {args.workers} worker "
        "processes. The dask array is built from the parts on the workers (`dask.delayed` reads, "
        "`da.from_delayed`) and persisted before the clock starts: DaskRankSVM's and LightGBM's fit times "
        "leave out building the array, fit_parts' takes in reading the parts on the workers (about 1 s of "
        "it here: the read column of the table above). Client RSS: the client process, which also runs the "
        "LocalCluster's scheduler (the same for every row): its resident set when the fit starts, and its "
        "peak during the fit (Linux's high-water mark, reset at the start); the data are 200k x 46 doubles, "
        "74 MB, held by the workers. Load average (1 min) at the start and the end of this run: "
        f"{args.load[0]:.1f}, {args.load[-1]:.1f} (other jobs share these 2 cores: the times are noisy; the "
        "iterations and weights are exact).\n",
        "| run | fit (s) | Newton iterations | client RSS at the start / peak during the fit (MB) | weights against "
        "fit_parts |",
        "|---|---:|---:|---:|---|",
    ]
    for mode, r in rows:
        if r["coef"] is None:
            same = "(another model: gradient-boosted trees)"
        else:
            diff = np.abs(np.asarray(r["coef"]) - ref).max() / np.abs(ref).max()
            same = "same" if diff == 0 else f"max rel. diff {diff:.1e}"
        lines.append(f"| {labels[mode]} | {r['fit']:.2f} | {r['iterations']} | {r['client_before_mb']:.0f} / "
                     f"{r['client_peak_mb']:.0f} | {same} |")
    if not any(mode == "lightgbm" for mode, _ in rows):
        lines.append("\nlightgbm is not installed here: its column is left out (it is not a dependency of rankkit; "
                     "`pip install lightgbm` and run again to add it).")
    return "\n".join(lines) + "\n"


def update_section(path: Path, text: str, marker: str = "collections") -> None:
    """Replace the section between `<!-- marker -->` lines of the report (or append it)."""
    begin, end = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    old = path.read_text() if path.exists() else ""
    block = f"{begin}\n{text}{end}\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end) + 1:]
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + block
    path.write_text(new)


def cli_run(args, C) -> dict:
    """`rankkit train ARGS -C C` in a fresh process: wall time and the peak RSS of rankkit's
    process (RUSAGE_CHILDREN of a wrapper that runs only it: the largest of its processes, so with
    --dask local:N a worker's or the client's, whichever is larger)."""
    out = BENCH / "bench-cli.model"
    cmd = [sys.executable, "-c", MEASURE, sys.executable, "-m", "rankkit", "train", *args, str(out), "-C", repr(C)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise SystemExit(f"rankkit train {' '.join(args)} failed:\n{res['stderr']}")
    from rankkit.io.model import read_model

    m = read_model(str(out))
    res.update(objective=float(m.header["objective"]), weights=m.weights.tobytes().hex()[:16] + "...",
               weights_bytes=m.weights.tobytes())
    out.unlink()
    return res


def cli_rows(size, C, workers) -> list:
    """The command line on one file, on its parts in one process, and on its parts with --dask
    local:WORKERS: wall time and peak RSS, in this run."""
    whole = BENCH / ("letor.txt" if size == "200k" else "letor1m.txt")
    pattern = str(BENCH / f"parts-{size}" / "part-*.txt")
    rows = []
    for label, args in (("one file, one process", [str(whole)]),
                        (f"{N_PARTS} parts, one process", [pattern]),
                        (f"{N_PARTS} parts, --dask local:{workers}", [pattern, "--dask", f"local:{workers}"])):
        res = cli_run(args, C)
        print("cli", size, label, json.dumps({k: v for k, v in res.items() if k != "weights_bytes"}), flush=True)
        rows.append((label, res))
    return rows


def run(mode, C, workers, files) -> dict:
    env = dict(os.environ, RANKKIT_ROOT=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, repr(C), str(workers), *files], env=env,
                          capture_output=True, text=True, timeout=3600)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"benchmark child failed:\n{proc.stderr[-3000:]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sizes", default="200k,1m")
    ap.add_argument("--C", type=float, default=1e-3)
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS-distributed.md"))
    ap.add_argument("--from-log", default=None, help="write the report from a previous run's printed results")
    ap.add_argument("--collections", action="store_true",
                    help="only DaskRankSVM on a dask array against fit_parts (and lightgbm.DaskLGBMRanker if "
                    "importable), on the first of --sizes; rewrites that section of --out")
    args = ap.parse_args(argv)
    if args.collections:
        size = args.sizes.split(",")[0]
        run("one", args.C, 1, ensure_parts(size)[:1])  # warm the numba cache (compiling is not what is measured)
        args.load = [os.getloadavg()[0]]
        rows = collection_rows(size, args.C, args.workers)
        args.load.append(os.getloadavg()[0])
        update_section(Path(args.out), collections_report(args, size, rows))
        print(f"wrote {args.out}")
        return
    if args.from_log:  # the lines this script printed: size, one-process JSON, distributed JSON
        text = [ln for ln in Path(args.from_log).read_text().splitlines() if ln.strip() and not ln.startswith("cli ")]
        rows = [(text[i], json.loads(text[i + 1]), json.loads(text[i + 2])) for i in range(0, len(text) - 2, 3)
                if text[i] in SIZES]
        write_report(args, rows)
        return
    rows = []
    args.load = [os.getloadavg()[0]]  # other jobs on the machine: the times are only as good as this
    for size in args.sizes.split(","):
        files = ensure_parts(size)
        run("one", args.C, 1, files[:1])  # warm the numba cache (compiling is not what is measured)
        one = run("one", args.C, 1, files)
        dist = run("dask", args.C, args.workers, files)
        print(size, json.dumps(one), json.dumps(dist), sep="\n", flush=True)
        rows.append((size, one, dist))
    cli = {size: cli_rows(size, args.C, args.workers) for size in args.sizes.split(",") if size == "1m"}
    args.load.append(os.getloadavg()[0])
    write_report(args, rows, cli)


def cli_report(args, cli) -> list:
    """The command line's table: one file against its parts, in one process and on a LocalCluster."""
    lines = []
    for size, runs in cli.items():
        base = runs[0][1]
        lines += [
            f"### `rankkit train` on the {size}-document file: one process against {args.workers} workers\n",
            f"The same run: `rankkit train FILE M -C {args.C:g}`, `rankkit train 'parts-{size}/part-*.txt' M` (no "
            f"--dask: the parts held apart in this process, their partial sums added in part order as on a cluster) "
            f"and the same with `--dask local:{args.workers}` "
            "(the cluster started and stopped by rankkit: its start is in the wall time). Peak RSS: the largest "
            "process of the run (for --dask, the largest of the client and its workers; each worker holds "
            "half the data).\n",
            "| run | wall (s) | wall / one file | peak RSS (MB) | peak RSS / one file | objective | weights as one file "
            "| weights as the parts in one process |",
            "|---|---:|---:|---:|---:|---:|---|---|",
        ]
        parts_one = runs[1][1]
        for label, r in runs:
            same = "same bytes" if r["weights_bytes"] == base["weights_bytes"] else (
                f"rel. objective diff {abs(r['objective'] - base['objective']) / abs(base['objective']):.1e}")
            same_parts = "same bytes" if r["weights_bytes"] == parts_one["weights_bytes"] else "DIFFERENT bytes"
            lines.append(f"| {label} | {r['wall']:.1f} | {r['wall'] / base['wall']:.2f} | {r['peak_rss_kb'] / 1024:.0f} | "
                         f"{r['peak_rss_kb'] / base['peak_rss_kb']:.2f} | {r['objective']:.12g} | {same} | {same_parts} |")
        lines.append("")
    return lines


def write_report(args, rows, cli=None):
    lines = [
        "## Distributed training (Dask): measured\n",
        f"{dt.date.today().isoformat()}, {machine()}. `python scripts/bench_distributed.py --workers {args.workers}` "
        f"(C = {args.C:g}, tol 1e-6): the synthetic LETOR files of `scripts/make_synthetic.py letor` (46 dense "
        "features, 100 documents per query), each cut into 8 parts of whole queries; a LocalCluster of "
        f"{args.workers} worker processes (one kernel thread each) against one process (all cores) on the same "
        "parts. **This machine has 2 cores shared with other jobs while these numbers were taken: the times are "
        "noisy (tens of percent between runs); the counts (iterations, rounds, bytes) are exact.**"
        + (f" Load average (1 min) at the start and the end of this run: {args.load[0]:.1f}, {args.load[-1]:.1f}."
           if getattr(args, "load", None) else "") + "\n",
        "| file | run | wall (s) | read (s) | fit (s) | Newton iterations | time / iteration (s) | rounds / iteration "
        "| bytes moved / iteration | communication / round (ms) | client peak RSS (MB) | worker peak RSS (MB) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, one, dist in rows:
        it1, it2 = max(one["iterations"], 1), max(dist["iterations"], 1)
        lines.append(f"| {size} docs | one process | {one['wall']:.2f} | {one['read']:.2f} | {one['fit']:.2f} | "
                     f"{one['iterations']} | {one['fit'] / it1:.3f} | - | 0 | - | {one['client_rss_kb'] / 1024:.0f} | - |")
        read = dist["read_seconds"]
        comm_round = 1000 * dist["communication_seconds"] / max(dist["rounds"], 1)
        lines.append(f"| {size} docs | {dist['workers']} workers, {dist['parts']} parts | {dist['wall']:.2f} "
                     f"(cluster start {dist['startup']:.1f}) | {read:.2f} | {dist['fit']:.2f} | {dist['iterations']} | "
                     f"{dist['fit'] / it2:.3f} | {dist['rounds'] / it2:.1f} | {dist['bytes_moved'] / it2 / 1024:.1f} KB | "
                     f"{comm_round:.1f} | {dist['client_rss_kb'] / 1024:.0f} | "
                     f"{', '.join(f'{r / 1024:.0f}' for r in dist['worker_rss_kb'])} |")
    lines.append("")
    lines.append("Reading: the distributed read is the workers' (each reads its parts) plus the query-split check. "
                 "Communication / round: the wall time of a round on the client minus the busiest worker's compute "
                 "(Dask's scheduling and messages, the client's loop). Bytes moved: the numpy payloads, points and "
                 "directions out (one d-vector per part) and partial sums back (one d-vector or three numbers per part).\n")
    per_round = " and ".join(f"{1000 * d['communication_seconds'] / max(d['rounds'], 1):.0f} ms" for _, _, d in rows)
    lines.append("What the table shows for the overhead: the bytes moved per iteration do not depend on the number of "
                 "documents (a few d-vectors per part and round), and the communication per round stays of the same order "
                 f"({per_round} per round for the files above, in that order); on this loaded 2-core machine it "
                 "is dominated by the scheduler and the client competing with the workers for the cores.\n")
    lines.append("Objectives (one process: the parts' partial sums in this process, as `rankkit train PARTS`): " + "; ".join(
        f"{size}: one process {one['objective']:.12g}, distributed {dist['objective']:.12g} ("
        + ("the same weight bytes" if one.get("weights") is not None and one.get("weights") == dist.get("weights")
           else f"relative difference {abs(one['objective'] - dist['objective']) / abs(one['objective']):.1e}") + ")"
        for size, one, dist in rows) + ".\n")
    lines += cli_report(args, cli or {})
    out = Path(args.out)
    kept = out.read_text() if out.exists() else ""  # the collections section (--collections) is kept as it was
    kept = kept[kept.index("<!-- collections -->"):] if "<!-- collections -->" in kept else ""
    out.write_text("\n".join(lines) + "\n" + projection(rows) + ("\n" + kept if kept else ""))
    print(f"wrote {args.out}")


def projection(rows, n_docs=1e10, n_queries=1e8, d=136, n_workers=100, parts_per_worker=10, cores=16,
               bandwidth=1.25e9, o_doc=1e-3) -> str:
    """On paper, from the largest measured run: 1e10 documents on 100 workers. The model is stated
    in the text it returns; every constant measured here is named. o_doc: Dask's documented
    scheduling overhead per task ("up to 1 ms"), beside the overhead measured on this machine."""
    size, one, dist = rows[-1]
    n_meas = dist["n_documents"]
    d_meas = dist["n_features"]
    w_meas = dist["workers"]
    rounds_per_it = dist["rounds"] / max(dist["iterations"], 1)
    # compute: seconds per document per round on one kernel thread, scaled by non-zeros per document
    c_doc = dist["compute_seconds"] / dist["rounds"] / (n_meas / w_meas)
    c_doc_136 = c_doc * d / d_meas
    # overhead of a round that is not compute (scheduling, messages, client), per part
    parts = dist["parts"]
    o_meas = dist["communication_seconds"] / dist["rounds"] / parts
    o_part = o_doc
    # memory: the worker's bytes per document, marginal between the two sizes when both ran
    # (the Python and numba runtime of a worker is a constant, not per document)
    if len(rows) > 1:
        small = rows[0][2]
        b_doc = ((max(dist["worker_rss_kb"]) - max(small["worker_rss_kb"])) * 1024
                 / ((n_meas - small["n_documents"]) / w_meas))
    else:
        b_doc = max(dist["worker_rss_kb"]) * 1024 / (n_meas / w_meas)
    bytes_per_value = 12  # float64 value + int32 column index
    b_doc_136 = b_doc + (d - d_meas) * bytes_per_value
    r_doc = dist["read_seconds"] * w_meas / n_meas
    docs_per_worker = n_docs / n_workers
    t_read = docs_per_worker * r_doc * d / d_meas / cores
    mem = docs_per_worker * b_doc_136
    P = n_workers * parts_per_worker
    t_compute = docs_per_worker * c_doc_136 / cores  # the kernels are parallel over rows
    t_overhead = P * o_part
    t_net = 2 * P * d * 8 / bandwidth  # w out, one d-vector back per part, through the client's link
    t_round = t_compute + t_overhead + t_net
    iters = (15, 30)
    lines = [
        "## Distributed training: projected to 1e10 documents (on paper)\n",
        f"From the {size} run above ({w_meas} workers, {parts} parts), to {n_docs:.0e} documents in {n_queries:.0e} "
        f"queries (100 per query), {d} dense features, {n_workers} workers of {cores} cores, {parts_per_worker} "
        f"parts per worker ({P} parts), a {bandwidth * 8 / 1e9:.0f} Gbit/s link to the client. The model:\n",
        "- time per round = compute + overhead + transfer. compute = (documents per worker) x c x 136/46 / cores, "
        f"with c = {c_doc * 1e9:.0f} ns per document per round measured on one kernel thread (46 features; scaled "
        "by non-zeros per document, which overstates the sorting share, and divided by the cores, which assumes "
        "the row-parallel kernels scale on a worker); overhead = parts x o, with o = "
        f"{o_part * 1e3:.1f} ms per task, Dask's documented scheduling overhead (\"up to 1 ms per task\"; measured "
        f"here: {o_meas * 1e3:.1f} ms per part per round, on 2 cores shared by the scheduler, the workers, the client "
        "and other jobs, so not a figure for a dedicated scheduler); "
        "transfer = 2 x parts x d x 8 bytes over the client's link (w out, one partial sum back per part).",
        f"- rounds per Newton iteration: {rounds_per_it:.1f} measured (1 f/g, the CG steps' Hv, line-search steps); "
        f"Newton iterations: {iters[0]}-{iters[1]} assumed, a margin over the {dist['iterations']} measured here (the "
        "count did not grow from 200k to 1M documents on these synthetic data; real click data are harder).",
        f"- reading: {r_doc * 1e6:.1f} us per document per worker measured ({d_meas} features; parsing is "
        "linear in the bytes, so scaled by 136/46, divided by the cores: the reader is parallel within a part).",
        "- the query-split check at load merges the parts' query ids in a tree of tasks on the workers: its last "
        f"merge holds all {n_queries:.0e} ids (16 bytes each, {n_queries * 16 / 1e9:.1f} GB) on one worker, once.",
        f"- memory per worker = documents per worker x {b_doc_136:.0f} bytes: {b_doc:.0f} bytes per document "
        f"measured ({'the growth of worker peak RSS between the two files over the documents added' if len(rows) > 1 else 'worker peak RSS / documents held'}, "
        f"{d_meas} features: data, labels, query structure, the objective's scratch, the reader's peak) plus "
        f"{bytes_per_value} bytes per extra feature value.\n",
        "| quantity | projection |",
        "|---|---:|",
        f"| documents per worker | {docs_per_worker:.1e} |",
        f"| memory per worker | {mem / 1e9:.0f} GB |",
        f"| compute per round | {t_compute:.1f} s |",
        f"| scheduling and messages per round | {t_overhead:.2f} s ({P * o_meas:.0f} s at this machine's measured o) |",
        f"| transfer per round | {t_net * 1e3:.2f} ms ({2 * P * d * 8 / 1e6:.1f} MB) |",
        f"| time per Newton iteration | {t_round * rounds_per_it:.0f} s |",
        f"| total ({iters[0]}-{iters[1]} iterations) | {t_round * rounds_per_it * iters[0] / 60:.0f}-"
        f"{t_round * rounds_per_it * iters[1] / 60:.0f} min |",
        f"| reading the parts (~{n_docs * 1.7e3 / 1e12:.0f} TB of text, before the first iteration) | "
        f"{t_read / 60:.0f} min, if the store delivers {n_docs * 1.7e3 / t_read / 1e9:.0f} GB/s in all |",
        "",
        "Where it stops scaling: compute per round falls as 1/workers, while the client's share grows with the "
        "number of parts: the scheduler handles one task per part per round (the overhead o above), and the "
        "client adds the parts' d-vectors in part order (P x d additions: negligible at d = 136). With these "
        f"constants the overhead equals the compute at about {(n_docs * c_doc_136 / (cores * o_part * parts_per_worker)) ** 0.5:.0f} "
        f"workers ({parts_per_worker} parts each); beyond that, fewer, larger parts per worker (one task per "
        "worker per round) push the limit out by the parts-per-worker factor, and the network only matters "
        "for d in the millions (d x 8 bytes per part per round). The memory per worker is the first limit in "
        f"practice: {mem / 1e9:.0f} GB per worker here means 100 large machines, or about "
        f"{n_docs * b_doc_136 / 64e9:.0f} workers of 64 GB.\n",
    ]
    return "\n".join(lines)

if __name__ == "__main__":
    main()
