"""The habits users bring (issue 37): another tool's flags answered with rankkit's name for them,
trec_eval's measure names and argument order, LETOR 3.0's fold layout."""

from __future__ import annotations

import json

import click
import numpy as np
import pytest

from rankkit import cli
from rankkit.app import habits
from tests.test_cli import assert_one_line_error, rankkit


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
    (["predict", "--model_in", "m", "--test_file", "t", "--results_file", "r"], ["--model_in", "rankkit predict"]),
    (["predict", "--lambda", "0.1", "a", "b"], ["predict has no option '--lambda'", "rankkit train's --lambda"]),
    (["eval", "--iterations", "5", "a", "b"], ["--iterations", "rankkit train's --iterations"]),
    (["train", "-train", "tr.txt", "-save", "m"], ["no option '-train'", "rankkit train FILE MODEL"]),
    (["train", "-ranker", "4", "a", "b"], ["-ranker", "--solver"]),
    (["eval", "-metric2T", "NDCG@10", "a", "b"], ["no option '-metric2T'", "-m of rankkit eval"]),  # not -m etric2T
    (["eval", "-q", "a", "b"], ["eval has no option '-q'", "--per-query"]),  # trec_eval's, not liblinear's
    (["train", "-q", "a", "b"], ["-q", "drop -q"]),
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
              "map_cut.5": "map@5", "ndcg_cut_3": "ndcg@3", "P_5": "p@5"}


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
    measures = {"ndcg_cut.3,10", "P.5,10", "map", "recip_rank", "ndcg", "map_cut.5"}
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
    ("Rprec", "trec_eval's measure 'Rprec' has no counterpart in rankkit"),
    ("bpref", "trec_eval's measure 'bpref' has no counterpart"),
    ("mrr@3", "metric 'mrr@3' takes no cutoff k: mrr"),
    ("dcg", "metric 'dcg' needs a cutoff k: dcg@10"),
    ("foo", "unknown metric 'foo'"),
])
def test_metric_name_errors_say_what_is_wrong(tmp_path, metric, fragment):
    _qrels_and_run(tmp_path)
    assert_one_line_error(rankkit("eval", "--qrels", "qrels", "run", "-m", metric, cwd=tmp_path), fragment)
