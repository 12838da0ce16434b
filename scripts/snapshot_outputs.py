"""Run a fixed set of rankkit commands and Python calls and keep every output, so that two commits
can be compared byte for byte (a refactoring must not change a model, a score or a metric).

    python scripts/snapshot_outputs.py OUT_DIR [--shared ../shared] [--dask]
    diff -r OUT_A OUT_B

Timestamps ("created") and timing lines are removed from what is kept; everything else is as
written. MQ2008 Fold1 from ../shared/data is used when present (skipped otherwise). The commands
run as `python -m rankkit` with this interpreter, so PYTHONPATH selects the tree under test.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SAMPLE = HERE / "data"

# timing and timestamp fields: the only things allowed to differ between two runs
VOLATILE = re.compile(
    r'("?(created|train_time_seconds|read_seconds|seconds|time|compute_seconds|communication_seconds|'
    r'total_seconds|elapsed)"?\s*[:=]\s*)("[^"]*"|[-+0-9.eE]+)'
)
SECONDS = re.compile(r"\b\d+\.\d+\s?s\b")


# model-header lines that hold a time, or a digest of it (the checksum covers `created`), or of the
# parts' paths (parts_sha256 hashes each part's name with its digest)
HEADER = re.compile(r"^(created|[a-z_]*_seconds|checksum sha256|parts_sha256) .*$", re.M)
# progress lines of the exact path: which breakpoints they show is decided by a 2-second clock
PROGRESS = re.compile(r"^exact path: breakpoint .*\n", re.M)


def scrub(text: str) -> str:
    text = text.replace(str(HERE), "ROOT")
    text = HEADER.sub(lambda m: m.group(1) + " X", text)
    text = PROGRESS.sub("", text)
    text = VOLATILE.sub(lambda m: m.group(1) + "X", text)
    text = SECONDS.sub("Xs", text)
    return text


def scrub_table(text: str) -> str:
    """A path table's `seconds` column (its header names it) as X."""
    lines = text.split("\n")
    cols = lines[0].split("\t")
    if "seconds" not in cols:
        return text
    k = cols.index("seconds")
    out = [lines[0]]
    for line in lines[1:]:
        f = line.split("\t")
        if len(f) > k:
            f[k] = "X"
        out.append("\t".join(f))
    return "\n".join(out)


def run(out: Path, name: str, args: list[str], env: dict, stdin: str | None = None) -> None:
    proc = subprocess.run([sys.executable, "-m", "rankkit", *args], cwd=out, env=env, capture_output=True,
                          text=True, input=stdin)
    (out / f"{name}.cmd").write_text(
        " ".join(args) + f"\nexit {proc.returncode}\n--- stdout\n{scrub(proc.stdout)}--- stderr\n{scrub(proc.stderr)}"
    )


def write_qrels(data: str, path: Path) -> str | None:
    """A TREC qrels file (`qid 0 docid label`) from a LETOR file's `# docid = X` comments (eval --qrels
    takes qrels, not a LETOR file); None when a line names no docid."""
    rows = []
    with open(data, encoding="utf-8") as f:
        for line in f:
            head, _, comment = line.partition("#")
            tokens = head.split()
            if not tokens:
                continue
            m = re.search(r"docid\s*=\s*(\S+)", comment)
            if m is None:
                return None
            rows.append(f"{tokens[1].split(':', 1)[1]} 0 {m.group(1)} {tokens[0]}\n")
    path.write_text("".join(rows))
    return path.name


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shared", default=str(HERE.parent / "shared"))
    ap.add_argument("--dask", action="store_true", help="also the --dask local:2 commands")
    a = ap.parse_args()
    out = Path(a.out).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    env = dict(os.environ)
    tr, va, te = (str(SAMPLE / f"sample.{k}.txt") for k in ("train", "vali", "test"))
    sets = [("s", tr, va, te, "0.01")]
    mq = Path(a.shared) / "data" / "MQ2008" / "Fold1"
    if mq.is_dir():
        sets.append(("mq", str(mq / "train.txt"), str(mq / "vali.txt"), str(mq / "test.txt"), "0.001"))
    solvers = [
        ("newton", []), ("newton-huber", ["--solver", "newton", "--loss", "huber"]),
        ("newton-logistic", ["--solver", "newton", "--loss", "logistic"]),
        ("newton-qnorm", ["--solver", "newton", "--query-norm"]),
        ("newton-margin", ["--solver", "newton", "--rescale", "margin"]),
        ("newton-slack", ["--solver", "newton", "--rescale", "slack"]),
        ("newton-pairs", ["--solver", "newton-pairs"]),
        ("newton-pairs-swap", ["--solver", "newton-pairs", "--rescale", "margin", "--delta", "swap"]),
        ("bundle", ["--solver", "bundle"]),
        ("factorized", ["--solver", "factorized", "--iterations", "30"]),
        ("rbf", ["--solver", "newton", "--kernel", "rbf", "--landmarks", "50"]),
    ] + [(s, ["--solver", s, "--iterations", "20000"]) for s in
         ("sgd", "pegasos", "pa", "romma", "logreg", "margin-perceptron", "pair-sgd", "query-sgd")]
    for tag, train, valid, test, C in sets:
        for name, opts in solvers:
            stochastic = "--iterations" in opts and name != "factorized"
            copts = [] if stochastic else ["-C", C]
            if name == "factorized":
                copts = ["-C", C]
            m = f"{tag}.{name}.model"
            run(out, f"{tag}.{name}.train", ["train", train, m, *opts, *copts, "--seed", "3", "-v"], env)
            run(out, f"{tag}.{name}.predict", ["predict", test, m, f"{tag}.{name}.scores"], env)
            run(out, f"{tag}.{name}.eval", ["eval", test, f"{tag}.{name}.scores", "-m", "map", "-m", "ndcg@10"], env)
        run(out, f"{tag}.eval2", ["eval", test, f"{tag}.newton.scores", f"{tag}.pegasos.scores", "--per-query"], env)
        run(out, f"{tag}.eval-json", ["eval", test, f"{tag}.newton.scores", "--format", "json"], env)
        for conv in ("letor4", "letor3", "mslr", "exp", "trec"):
            run(out, f"{tag}.eval-{conv}", ["eval", test, f"{tag}.newton.scores", "--convention", conv], env)
        run(out, f"{tag}.path-grid", ["path", train, valid, "--method", "grid", "--n-points", "8", "--table",
                                      f"{tag}.grid.tsv", "--out-model", f"{tag}.grid.model", "-m", "map", "-v"], env)
        if tag == "s":
            run(out, f"{tag}.path-exact", ["path", train, valid, "--method", "exact", "--table", f"{tag}.exact.tsv",
                                           "--out-model", f"{tag}.exact.model", "-v"], env)
            run(out, f"{tag}.path-exact-rbf", ["path", train, valid, "--method", "exact", "--kernel", "rbf",
                                               "--table", f"{tag}.exact-rbf.tsv", "--max-events", "300"], env)
        for fmt in ("svm_rank", "liblinear", "sofia-ml"):
            run(out, f"{tag}.convert-{fmt}", ["convert", f"{tag}.newton.model", f"{tag}.newton.{fmt}", "--to", fmt], env)
            run(out, f"{tag}.predict-{fmt}", ["predict", test, f"{tag}.newton.{fmt}", f"{tag}.{fmt}.scores"], env)
        run(out, f"{tag}.predict-trec", ["predict", test, f"{tag}.newton.model", f"{tag}.trec.run", "--format", "trec"],
            env)
        qrels = write_qrels(test, out / f"{tag}.qrels")
        if qrels:
            run(out, f"{tag}.eval-qrels", ["eval", "--qrels", qrels, f"{tag}.trec.run"], env)
        if a.dask:
            run(out, f"{tag}.dask-train", ["train", train, f"{tag}.dask.model", "-C", C, "--dask", "local:2"], env)
    mqdir = Path(a.shared) / "data" / "MQ2008"
    if mqdir.is_dir():
        run(out, "mq.folds", ["path", "--folds", str(mqdir), "--n-points", "5", "-m", "map"], env)
    lgb = Path(a.shared) / "data" / "LightGBM-lambdarank"
    if lgb.is_dir():
        run(out, "lgb.train", ["train", str(lgb / "rank.train"), "lgb.model", "-C", "0.01", "-v"], env)
        run(out, "lgb.predict", ["predict", str(lgb / "rank.test"), "lgb.model", "lgb.scores"], env)
        run(out, "lgb.eval", ["eval", str(lgb / "rank.test"), "lgb.scores", "--convention", "exp"], env)
    py = (
        "import numpy as np, rankkit\n"
        f"X, y, q = rankkit.load_svmlight_file({tr!r}, query_id=True)\n"
        f"Xt, yt, qt = rankkit.load_svmlight_file({te!r}, query_id=True)\n"
        "m = rankkit.RankSVM(C=0.01).fit(X, y, qid=q); m.save('py.ranksvm.model')\n"
        "print(repr(m.coef_.tolist()))\n"
        "print(rankkit.evaluate(yt, m.predict(Xt), qt, metrics=['map', 'ndcg@10']))\n"
        "s = rankkit.SGDRanker(learner='pegasos', iterations=5000, random_state=1).fit(X, y, qid=q)\n"
        "print(repr(s.coef_.tolist()))\n"
        "f = rankkit.FactorizedRankSVM(K=3, iterations=20, random_state=1).fit(X, y, qid=q)\n"
        "print(repr(f.coef_.tolist()))\n"
        f"p = rankkit.RankSVM(C=0.01).fit_parts([{tr!r}, {va!r}]); p.save('py.parts.model')\n"
        "print(repr(p.coef_.tolist()))\n"
        f"Xv, yv, qv = rankkit.load_svmlight_file({va!r}, query_id=True, n_features=X.shape[1])\n"
        "r = rankkit.regularization_path(X, y, Xv, yv, qid=q, qid_valid=qv, method='grid', n_points=6, metric='map')\n"
        "print(repr(r.C.tolist()), repr(r.valid_metric.tolist()), r.chosen, r.at_edge)\n"
    )
    proc = subprocess.run([sys.executable, "-c", py], cwd=out, env=env, capture_output=True, text=True)
    (out / "python.out").write_text(f"exit {proc.returncode}\n{scrub(proc.stdout)}--- stderr\n{scrub(proc.stderr)}")
    # models and tables written by the commands: scrubbed in place
    for p in sorted(out.iterdir()):
        if p.is_file() and p.suffix != ".cmd":
            try:
                text = scrub(p.read_text())
                p.write_text(scrub_table(text) if p.suffix == ".tsv" else text)
            except UnicodeDecodeError:
                pass


if __name__ == "__main__":
    main()
