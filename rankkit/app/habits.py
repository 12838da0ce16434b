"""The habits users bring: the flags of svm_rank, liblinear-ranksvm, sofia-ml, RankLib and trec_eval,
each answered with the rankkit option or command that does the same (rankkit/cli.py's parse hook
asks `advice`; docs/migrating.md is the page that translates whole commands).

One table, flag -> advice, and a few per command where the same flag means another thing there
(trec_eval's -q and -c under `eval`). Imports nothing: `rankkit --help` stays instant.
"""

from __future__ import annotations

# svm_rank_learn's -c C minimises 0.5||w||^2 + (C/Q) sum_pairs hinge (Q: the training queries; the
# svm_struct scaling), which is rankkit's --loss hinge -C C/Q (scripts/bench_peers.py compares the
# two objectives so). liblinear-ranksvm's -c is rankkit's -C with the default squared hinge.
_C = ("liblinear-ranksvm's -c C is rankkit's -C C (the same squared-hinge objective); svm_rank's -c C weights "
      "the hinge loss divided by the number of training queries Q: --loss hinge -C C/Q")
_NO_BIAS = "a bias term does not change a ranking: rankkit fits none (drop it)"
_PREDICT = "rankkit predict DATA MODEL [OUT] (OUT: the scores, one per line; default stdout)"

FOREIGN = {
    # svm_rank (svm_rank_learn) and liblinear-ranksvm (train / predict)
    "-c": _C,
    "-s": "liblinear-ranksvm's -s 8 (L2-loss RankSVM in the primal) is rankkit train's default, --solver newton: "
          "drop it",
    "-t": "svm_rank's -t (kernel type) is --kernel linear|poly|rbf (-t 0, linear, is the default)",
    "-e": "svm_rank's and liblinear-ranksvm's -e (stopping tolerance) is --tol (its rule per solver: rankkit "
          "train --help)",
    "-l": "svm_rank's -l 1 (swapped pairs, its default loss) is --loss hinge",
    "-p": "svm_rank's -p 1 (linear slacks) is --loss hinge, -p 2 (squared slacks) --loss squared-hinge",
    "-w": "svm_rank's cutting-plane algorithm (-w) is --solver bundle (the hinge loss)",
    "-#": "svm_rank's -# (iterations) is --max-iter",
    "-g": "svm_rank's -g (rbf gamma) is --gamma",
    "-d": "svm_rank's -d (poly degree) is --degree",
    "-r": "svm_rank's -r (poly coef0) is --coef0",
    "-o": "svm_rank's -o (slack or margin rescaling) has no counterpart; rankkit's cost-sensitive pairs are "
          "--rescale",
    "-B": "liblinear-ranksvm's -B: " + _NO_BIAS,
    "-b": "svm_rank's -b: " + _NO_BIAS,
    "-q": "rankkit is quiet unless -v is given: drop -q",
    # sofia-ml
    "--learner_type": "sofia-ml's --learner_type is --solver: pegasos, sgd-svm -> sgd, passive-aggressive -> pa, "
                      "romma, logreg-pegasos -> logreg, margin-perceptron",
    "--loop_type": "sofia-ml's --loop_type is --sampler: rank -> sofia (its own loop; rankkit's default, uniform, "
                   "is exactly uniform over pairs), query-norm-rank -> query-norm, roc -> roc",
    "--eta_type": "sofia-ml's --eta_type is --eta basic|pegasos|constant",
    "--lambda": "sofia-ml's --lambda is rankkit train's --lambda (with a stochastic --solver such as pegasos); "
                "rankkit experiment: --grid pegasos:lambda=V1,V2",
    "--iterations": "sofia-ml's --iterations is rankkit train's --iterations (with a stochastic --solver such as "
                    "pegasos)",
    "--training_file": "the training file is train's first argument: rankkit train TRAIN MODEL",
    "--model_out": "the model file is train's last argument: rankkit train TRAIN MODEL",
    "--model_in": "sofia-ml's --model_in is predict's MODEL: " + _PREDICT,
    "--test_file": "sofia-ml's --test_file is predict's DATA: " + _PREDICT,
    "--results_file": "sofia-ml's --results_file is predict's OUT: " + _PREDICT,
    "--passive_aggressive_c": "sofia-ml's --passive_aggressive_c is -C with --solver pa",
    "--random_seed": "sofia-ml's --random_seed is --seed",
    "--dimensionality": "rankkit reads the number of features from the data: drop --dimensionality",
    "--no_bias_term": "sofia-ml's --no_bias_term: " + _NO_BIAS,
    # RankLib (single dash, whole words)
    "-train": "RankLib's -train FILE -save MODEL is rankkit train FILE MODEL",
    "-save": "RankLib's -save MODEL is train's last argument: rankkit train TRAIN MODEL",
    "-test": "RankLib's -test FILE is rankkit predict FILE MODEL SCORES, then rankkit eval FILE SCORES "
             "(train, vali and test in one command: rankkit experiment)",
    "-validate": "RankLib's -validate FILE is rankkit path TRAIN VALID (C chosen on VALID), or rankkit experiment",
    "-ranker": "rankkit's rankers are linear (or kernel) RankSVMs: --solver (RankLib's -ranker 1..8 have no "
               "counterpart)",
    "-metric2t": "RankLib's -metric2t is -m of rankkit path and experiment (ndcg@10, err@10, map, p@10; RankLib's "
                 "own grading: --convention exp)",
    "-metric2T": "RankLib's -metric2T is -m of rankkit eval and experiment (ndcg@10, err@10, map, p@10; RankLib's "
                 "own grading: --convention exp)",
    "-load": "RankLib's -load MODEL is " + _PREDICT,
    "-rank": "RankLib's -rank is rankkit predict DATA MODEL --format ranked",
    "-score": "RankLib's -score is " + _PREDICT,
    "-kcv": "RankLib's -kcv is rankkit experiment DIR over a LETOR directory's folds",
    "-norm": "rankkit does not normalise features (LETOR's QueryLevelNorm files are): drop -norm",
}

# the same flag, another tool's meaning under this command
FOREIGN_BY_COMMAND = {
    "eval": {
        "-q": "trec_eval's -q (per-query figures) is --per-query",
        "-c": "trec_eval's -c (queries of the qrels missing from the run count 0) has no counterpart: "
              "rankkit eval averages over the queries the run and the qrels share, as trec_eval does without -c",
        "-M": "trec_eval's -M (documents per query) has no counterpart: each metric's @K cuts the ranking",
        "-l": "trec_eval's -l N (the lowest relevant label) is set by --convention (trec: label >= 1; mslr: "
              "label >= 2)",
    },
}


def advice(command: str | None, flag: str) -> str | None:
    """What to type instead of another tool's `flag` under rankkit `command` (None: the top level),
    or None if the flag is no other tool's."""
    return FOREIGN_BY_COMMAND.get(command or "", {}).get(flag) or FOREIGN.get(flag)
