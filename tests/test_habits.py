"""The habits users bring (issue 37): another tool's flags answered with rankkit's name for them,
trec_eval's measure names and argument order, LETOR 3.0's fold layout."""

from __future__ import annotations

import click
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
