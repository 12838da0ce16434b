"""The habits users bring (issue 37): another tool's flags answered with rankkit's name for them,
trec_eval's measure names and argument order, LETOR 3.0's fold layout."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
import pytest

from rankkit import cli
from rankkit.app import habits
from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, assert_one_line_error, rankkit


@pytest.mark.parametrize("args, fragments", [
    (["train", "-c", "3", "a", "b"], ["train has no option '-c'", "liblinear-ranksvm's -c C is rankkit's -C C",
                                      "svm_rank's -c C weights the hinge loss divided by the number of training "
                                      "queries Q: --loss hinge -C C/Q", "docs/migrating.md"]),
    (["train", "-c3", "a", "b"], ["no option '-c'", "--loss hinge -C C/Q"]),
    (["train", "-s", "8", "a", "b"], ["no option '-s'", "--solver newton"]),
    (["train", "-t", "2", "a", "b"], ["svm_rank's -t", "--kernel"]),
    (["train", "-e", "0.001", "a", "b"], ["-e", "--tol"]),
    (["train", "--learner_type", "pegasos", "--loop_type", "rank", "a", "b"], ["--learner_type", "--solver"]),
    (["train", "--loop_type", "rank", "a", "b"], ["--loop_type", "--sampler", "rank -> sofia"]),
    (["train", "--training_file", "a", "--model_out", "b"], ["--training_file", "rankkit train TRAIN MODEL"]),
    (["train", "--model_out=b", "a"], ["no option '--model_out'", "train's last argument"]),
    (['predict', '--model_in', 'm', '--test_file', 't', '--results_file', 'r'],
     ['--model_in', "sofia-ml's --model_in is predict's MODEL"]),
    (["predict", "--lambda", "0.1", "a", "b"], ["predict has no option '--lambda'", "rankkit train's --lambda"]),
    (["eval", "--iterations", "5", "a", "b"], ["--iterations", "rankkit train's --iterations"]),
    (["train", "-train", "tr.txt", "-save", "m"], ["no option '-train'", "rankkit train FILE MODEL"]),
    (["train", "-ranker", "4", "a", "b"], ["-ranker", "--solver"]),
    (["eval", "-metric2T", "NDCG@10", "a", "b"], ["no option '-metric2T'", "-m of rankkit eval"]),  # not -m etric2T
    (["eval", "-q", "a", "b"], ["eval has no option '-q'", "--per-query"]),  # trec_eval's, not liblinear's
    (["train", "-q", "a", "b"], ["-q", "drop -q"]),
    (["eval", "-l2", "a", "b"], ["eval has no option '-l'", "trec_eval's -l N", "--convention"]),  # not svm_rank's
    (["--learner_type", "pegasos"], ["rankkit has no option '--learner_type'", "--solver"]),
])
def test_a_foreign_flag_is_answered_with_rankkits_option(tmp_path, args, fragments):
    assert_one_line_error(rankkit(*args, cwd=tmp_path), *fragments)


def _parse(name, *args):
    parent = click.Context(cli.cli, info_name="rankkit")
    cli.cli.commands[name].make_context(name, list(args), parent=parent)


def test_every_foreign_flag_is_answered_under_every_command():
    for name, command in cli.cli.commands.items():
        if name == "warmup":  # its options are rankkit.warmup's, passed through
            continue
        own = {opt for p in command.params if isinstance(p, click.Option) for opt in (*p.opts, *p.secondary_opts)}
        flags = set(habits.FOREIGN) | set(habits.FOREIGN_BY_COMMAND.get(name, {}))
        for flag in sorted(flags - own):
            with pytest.raises(cli.ForeignFlag, match=f"{name} has no option '{flag}'"):
                _parse(name, flag, "1", "x", "y")


def test_option_values_and_rankkits_own_flags_are_not_foreign():
    # --fold takes three values: '-train' is a file name there, not RankLib's flag
    with pytest.raises(click.BadParameter, match="does not exist"):
        _parse("experiment", "--fold", "-train", "b", "c", "--", "nodir")
    _parse("train", "--lambda", "0.1", "-C0.5", "a", "b")  # train's own


# -- trec_eval's measure names ------------------------------------------------------------------
TREC_NAMES = {"ndcg_cut.10": "ndcg@10", "P.10": "p@10", "map": "map", "recip_rank": "mrr", "ndcg": "ndcg",
              "map_cut.5": "map@5", "ndcg_cut_3": "ndcg@3", "P_5": "p@5", "Rprec": "rprec"}


def _qrels_and_run(d):
    """12 queries: graded labels 0-2, score ties (by docid, as trec_eval), unjudged retrieved documents,
    judged documents not retrieved, a judged query without relevant documents; scores exact in float32."""
    rng = np.random.default_rng(7)
    qrels, run = [], []
    for q in range(12):
        docs = [f"d{q}-{i}" for i in range(int(rng.integers(3, 15)))]
        for i, doc in enumerate(docs):
            if i % 5 != 4:  # judged
                qrels.append(f"q{q} 0 {doc} {0 if q == 3 else int(rng.integers(0, 3))}")
            if i % 7 != 6:  # retrieved
                run.append(f"q{q} Q0 {doc} 0 {float(rng.integers(0, 6)) / 4} t")
    (d / "qrels").write_text("\n".join(qrels) + "\n")
    (d / "run").write_text("\n".join(run) + "\n")


def _json(proc):
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def test_trec_eval_measure_names_give_rankkits_values(tmp_path):
    _qrels_and_run(tmp_path)
    typed = _json(rankkit("eval", "--qrels", "qrels", "run", "--format", "json",
                          *[a for m in TREC_NAMES for a in ("-m", m)], cwd=tmp_path))
    own = _json(rankkit("eval", "--qrels", "qrels", "run", "--format", "json",
                        *[a for m in TREC_NAMES.values() for a in ("-m", m)], cwd=tmp_path))
    assert list(typed) == list(TREC_NAMES)  # the output names each measure as it was typed
    for trec_name, own_name in TREC_NAMES.items():
        assert typed[trec_name] == own[own_name], trec_name
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = {}, {}
    for line in (tmp_path / "qrels").read_text().split("\n")[:-1]:
        q, _, doc, rel = line.split()
        qrels.setdefault(q, {})[doc] = int(rel)
    for line in (tmp_path / "run").read_text().split("\n")[:-1]:
        q, _, doc, _, score, _ = line.split()
        run.setdefault(q, {})[doc] = float(score)
    measures = {"ndcg_cut.3,10", "P.5,10", "map", "recip_rank", "ndcg", "map_cut.5", "Rprec"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    for trec_name in TREC_NAMES:
        key = trec_name.replace(".", "_")
        expected = np.mean([v[key] for v in per_query.values()])
        assert typed[trec_name] == pytest.approx(expected, abs=1e-12), trec_name


def test_trec_eval_lists_are_spelled_out(tmp_path):
    _qrels_and_run(tmp_path)
    out = _json(rankkit("eval", "--qrels", "qrels", "run", "--format", "json", "-m", "P.5,10", "-m", "ndcg_cut",
                        cwd=tmp_path))
    assert list(out) == ["P.5", "P.10", *[f"ndcg_cut.{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]]


@pytest.mark.parametrize("metric, fragment", [
    ("ndcg@0", "metric 'ndcg@0': k must be >= 1"),
    ("P.0", "metric 'P.0': k must be >= 1"),
    ("recall.10", "trec_eval's measure 'recall.10' has no counterpart in rankkit"),
    ("bpref", "trec_eval's measure 'bpref' has no counterpart"),
    ("mrr@3", "metric 'mrr@3' takes no cutoff k: mrr"),
    ("dcg", "metric 'dcg' needs a cutoff k: dcg@10"),
    ("foo", "unknown metric 'foo'"),
])
def test_metric_name_errors_say_what_is_wrong(tmp_path, metric, fragment):
    _qrels_and_run(tmp_path)
    assert_one_line_error(rankkit("eval", "--qrels", "qrels", "run", "-m", metric, cwd=tmp_path), fragment)


# -- files in another tool's order ------------------------------------------------------------------
@pytest.fixture(scope="module")
def trec_files(tmp_path_factory):
    """qrels, a run and a scores file of the sample's test file, and a model."""
    d = tmp_path_factory.mktemp("order")
    (d / "test.txt").write_bytes(SAMPLE_TEST.read_bytes())
    assert rankkit("train", SAMPLE_TRAIN, "m.model", cwd=d).returncode == 0
    assert rankkit("predict", "test.txt", "m.model", "s.scores", cwd=d).returncode == 0
    assert rankkit("predict", "test.txt", "m.model", "r.run", "--format", "trec", cwd=d).returncode == 0
    qrels = []
    for line in SAMPLE_TEST.read_text().splitlines():
        label, qid = line.split()[:2]
        qrels.append(f"{qid.split(':')[1]} 0 {line.split('docid = ')[1].split()[0]} {label}")
    (d / "q.qrels").write_text("\n".join(qrels) + "\n")
    return d


@pytest.mark.parametrize("args, fragments", [
    (["eval", "q.qrels", "r.run"], ["q.qrels: looks like a TREC qrels file", "`rankkit eval --qrels q.qrels r.run`"]),
    (["eval", "r.run", "q.qrels"], ["r.run: looks like a TREC run", "`rankkit eval --qrels q.qrels r.run`"]),
    (["eval", "--qrels", "r.run", "q.qrels"], ["looks like a TREC run", "`rankkit eval --qrels q.qrels r.run`"]),
    (["eval", "q.qrels", "s.scores"], ["q.qrels: looks like a TREC qrels file", "`rankkit eval --qrels q.qrels RUN"]),
    (["eval", "s.scores", "test.txt"], ["s.scores:1: looks like a scores file", "`rankkit eval test.txt s.scores`"]),
    (["eval", "--qrels", "q.qrels", "s.scores"], ["s.scores: looks like a scores file", "without --qrels"]),
    (["eval", "--qrels", "q.qrels", "test.txt"], ["test.txt: looks like a LETOR data file",
                                                  "`rankkit eval test.txt SCORES`"]),
    (["train", "m.model", "test.txt"], ["m.model: is a model file and test.txt a data file",
                                        "`rankkit train test.txt m.model`"]),
    (["predict", "m.model", "test.txt", "out"], ["m.model: is a model file and test.txt a data file",
                                                 "`rankkit predict test.txt m.model out`"]),
])
def test_files_in_another_order_get_the_command_in_rankkits(trec_files, args, fragments):
    assert_one_line_error(rankkit(*args, cwd=trec_files), *fragments)
    assert not (trec_files / "out").exists()


def test_trec_eval_order_still_reads_rankkits(trec_files):
    proc = rankkit("eval", "--qrels", "q.qrels", "r.run", "-m", "ndcg_cut.10", "--format", "json", cwd=trec_files)
    assert proc.returncode == 0 and "ndcg_cut.10" in json.loads(proc.stdout)


# -- LETOR 3.0's fold layout -------------------------------------------------------------------------
def _letor3(root, compress=("gz", "", "bz2")):
    """OHSUMED's layout: Feature-min/FoldK/{trainingset,validationset,testset}.txt(.gz/.bz2/.xz)."""
    import bz2
    import gzip
    import lzma

    openers = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "": lambda b: b}
    lines = SAMPLE_TEST.read_bytes().splitlines(keepends=True)
    parts = {"trainingset": SAMPLE_TRAIN.read_bytes(), "validationset": b"".join(lines[:300]),
             "testset": b"".join(lines[300:])}
    for k in (1, 2):
        fold = root / "Feature-min" / f"Fold{k}"
        fold.mkdir(parents=True)
        for (stem, data), ext in zip(parts.items(), compress):
            (fold / (f"{stem}.txt" + (f".{ext}" if ext else ""))).write_bytes(openers[ext](data))
    return root / "Feature-min"


def test_letor3_folds_are_found(tmp_path):
    from rankkit.experiments import letor_folds

    folds = letor_folds(str(_letor3(tmp_path, ("xz", "gz", ""))))
    assert [f.name for f in folds] == ["Fold1", "Fold2"]
    assert [Path(p).name for p in (folds[1].train, folds[1].valid, folds[1].test)] == [
        "trainingset.txt.xz", "validationset.txt.gz", "testset.txt"]


def test_experiment_and_path_folds_run_on_letor3_layout(tmp_path):
    data = _letor3(tmp_path)
    proc = rankkit("experiment", data, "--n-points", "3", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    folds = json.loads(proc.stdout)["folds"]
    assert [(f["name"], Path(f["train"]).name) for f in folds] == [("Fold1", "trainingset.txt.gz"), ("Fold2", "trainingset.txt.gz")]
    proc = rankkit("path", "--folds", data, "-C", "1", "--out-dir", "models", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["Fold1.C1.model", "Fold2.C1.model"]


def test_an_unrecognised_fold_says_what_was_looked_for(tmp_path):
    (tmp_path / "d" / "Fold1").mkdir(parents=True)
    (tmp_path / "d" / "Fold1" / "training.txt").write_bytes(SAMPLE_TRAIN.read_bytes())
    for args in (["experiment", "d"], ["path", "--folds", "d"]):
        assert_one_line_error(rankkit(*args, cwd=tmp_path), "Fold1: no train file: looked for train.txt and "
                              "trainingset.txt (each also .gz, .bz2, .xz)", "--fold TRAIN VALID TEST")
    proc = rankkit("experiment", ".", cwd=tmp_path)  # folds one level down; no '--folds' under experiment
    err = assert_one_line_error(proc, ".: no Fold1, Fold2, ... directories (d holds folds: give ./d)")
    assert "--folds" not in err


@pytest.mark.parametrize("solver, grid, fragment", [
    ("pegasos", "pegasos:C=1,2", "--grid pegasos:C: pegasos has no C; its grid parameter is lambda "
                                 "(--grid pegasos:lambda=V1,V2,...)"),
    ("newton", "newton:lambda=1,2", "--grid newton:lambda: newton has no lambda; its grid parameter is C"),
    ("romma", "romma:C=1", "romma has no hyperparameter to grid over"),
])
def test_a_grid_names_the_parameter_its_solver_has(tmp_path, solver, grid, fragment):
    """Before: pegasos:C was refused as '-C is not an option of --solver pegasos' and newton:lambda
    was run with the lambda ignored, the table printing 'lambda=2' beside the chosen C."""
    t = str(SAMPLE_TEST)
    assert_one_line_error(rankkit("experiment", "--fold", t, t, t, "--solver", solver, "--grid", grid, cwd=tmp_path),
                          fragment)


# -- output a person reads ----------------------------------------------------------------------------
def test_eval_names_its_convention_in_one_short_line_and_in_full_under_v_and_json(trec_files):
    from rankkit.metrics import describe

    proc = rankkit("eval", "test.txt", "s.scores", cwd=trec_files)
    first = proc.stdout.decode().splitlines()[0]
    assert first == ("# convention trec: trec_eval: gain = label, rank r divided by log2(r + 1), a query without "
                     "relevant documents scores 0"), first  # was the 457-character full text
    proc = rankkit("eval", "test.txt", "s.scores", "-v", "--convention", "letor3", cwd=trec_files)
    assert f"convention letor3: {describe('letor3')}" in proc.stderr.decode()
    assert len(proc.stdout.decode().splitlines()[0]) < 160
    proc = rankkit("eval", "test.txt", "s.scores", "s.scores", "--format", "json", cwd=trec_files)
    assert json.loads(proc.stdout)["convention_description"] == describe("trec")


def test_eval_over_parts_names_its_convention_as_eval_does(trec_files, tmp_path):
    """eval PARTS... SCORES (rankkit.distributed's table) printed the full 457-character text."""
    lines = (trec_files / "test.txt").read_text().splitlines(keepends=True)
    cut = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].split()[1] != lines[i - 1].split()[1])
    (tmp_path / "p1.txt").write_text("".join(lines[:cut]))
    (tmp_path / "p2.txt").write_text("".join(lines[cut:]))
    whole = rankkit("eval", "test.txt", "s.scores", cwd=trec_files).stdout.decode().splitlines()
    parts = rankkit("eval", "p1.txt", "p2.txt", str(trec_files / "s.scores"), cwd=tmp_path)
    assert parts.returncode == 0, parts.stderr.decode()
    assert parts.stdout.decode().splitlines()[0] == whole[0]


def test_results_json_records_the_grid_each_fold_ran(tmp_path):
    """Fold2 trains on a third of the data: its default C grid differs from Fold1's. settings.grids was
    {} with the default grids; now each fold's C values, as its vali table lists them."""
    lines = SAMPLE_TRAIN.read_text().splitlines(keepends=True)
    (tmp_path / "small.txt").write_text("".join(lines[: len(lines) // 3]))
    t = str(SAMPLE_TEST)
    proc = rankkit("experiment", "--fold", SAMPLE_TRAIN, t, t, "--fold", "small.txt", t, t, "--n-points", "4",
                   "--format", "json", "--out-dir", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    results = json.loads(proc.stdout)
    assert results == json.loads((tmp_path / "out" / "results.json").read_text())
    grids = results["settings"]["grids"]["newton"]
    assert results["settings"]["grids_given"] == {}
    assert grids["Fold1"]["C"] != grids["Fold2"]["C"]
    for fold in ("Fold1", "Fold2"):
        rows = (tmp_path / "out" / fold / "newton.vali.tsv").read_text().splitlines()
        col = rows[0].split("\t").index("C")
        assert grids[fold]["C"] == sorted(float(r.split("\t")[col]) for r in rows[1:])


def test_the_grid_plot_puts_each_fold_at_its_own_values():
    """Fold A's grid C = 0.01, 0.1, 1 and fold B's C = 1, 10, 100, each chosen at C = 1 (A's last
    point, B's first): drawn at the same x (before: at index 2 and 0, the x axis labelled by one fold)."""
    import re

    from rankkit.plot import grid_svg

    series = [("A", [{"C": 0.01}, {"C": 0.1}, {"C": 1.0}], [0.1, 0.2, 0.3], 2),
              ("B", [{"C": 1.0}, {"C": 10.0}, {"C": 100.0}], [0.3, 0.2, 0.1], 0)]
    svg = grid_svg("newton", "ndcg@10", "trec", series)
    circles = re.findall(r'<circle cx="([0-9.]+)"', svg)
    assert len(circles) == 2 and circles[0] == circles[1]
    assert ">C 0.01<" in svg and ">C 100<" in svg  # both ends of the axis: the decades of both folds
    # lambda: the largest (most regularised) on the left, as along the grid
    lam = grid_svg("pegasos", "map", "trec", [("A", [{"lambda": 0.01}, {"lambda": 1.0}], [0.1, 0.2], 1)])
    assert re.findall(r'<circle cx="([0-9.]+)"', lam) == ["80.0"]
