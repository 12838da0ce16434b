"""The `rankkit` command: train, predict, eval.

This module parses options and calls the library; nothing else. It imports neither numpy nor numba
at module level, so `rankkit --help` is instant. Exit statuses are decided in one place (`main`):
0 success, 2 bad usage or bad input (one line on stderr, never a traceback), 1 internal error.
"""

from __future__ import annotations

import os
import sys

import click

from rankkit import processes, threads

threads.configure_runtime()  # idle OpenMP and OpenBLAS threads sleep: set before numpy or numba load
from rankkit.config import (
    CONVENTION_NAMES,
    DEFAULT_CONVENTION,
    DEFAULT_PERMUTATIONS,
    EMPTY_QUERY_CHOICES,
    MODEL_FORMATS,
    PREDICT_FORMATS,
    SIGNIFICANCE_TESTS,
    __version__,
)
from rankkit.config import MODEL_FORMAT_VERSION, OLDEST_MODEL_FORMAT
from rankkit.errors import EXIT_FAILURE, EXIT_USAGE, RankkitError
from rankkit.solvers import DEFAULT_SOLVER, LOSSES, SOLVERS

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _say(msg: str) -> None:
    from rankkit import console

    console.say(msg)


def _warn(msg: str) -> None:
    from rankkit import console

    console.warn(msg)


def _echo(text: str) -> None:
    """A line of results on stdout (an error if stdout cannot take it)."""
    from rankkit import console

    console.out(text)


def _echo_summary(text: str) -> None:
    """A line of a summary whose results are files (`rankkit path`): a reader that closes the pipe
    early (`| head -1`) stops the summary, not the command, which still writes its files and exits
    0. Any other failure to write stdout (a full disk) is an error, as with _echo."""
    from rankkit import console

    try:
        console.out(text)
    except BrokenPipeError:
        console.silence_stdout()


def _quiet_broken_pipe(fn):
    """`rankkit predict ... | head` closes the pipe early: that is not an error. Click would turn
    the BrokenPipeError into exit 1, so end the command here with status 0 and a silent stdout."""

    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            from rankkit import console

            console.silence_stdout()
            raise click.exceptions.Exit(0) from None

    return wrapper


class _Finite(click.FloatRange):
    """A float option that must be a finite number (nan and inf pass Click's range checks)."""

    name = "float"

    def _describe_range(self) -> str:
        if self.min is None and self.max is None:
            return "finite"
        return super()._describe_range()

    def convert(self, value, param, ctx):
        import math

        value = super().convert(value, param, ctx)
        if not math.isfinite(value):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return value


def _version_text() -> str:
    formats = (f"{OLDEST_MODEL_FORMAT} to {MODEL_FORMAT_VERSION}" if OLDEST_MODEL_FORMAT < MODEL_FORMAT_VERSION
               else str(MODEL_FORMAT_VERSION))
    return (f"rankkit %(version)s (Python {sys.version.split()[0]})\n"
            f"model files: reads rankkit-model format {formats}, writes format {MODEL_FORMAT_VERSION}; "
            f"reads and writes svm_rank, liblinear and sofia-ml models (rankkit convert)")


class ForeignFlag(click.UsageError):
    """Another tool's flag (svm_rank's -c, sofia-ml's --learner_type, RankLib's -train, ...): one line
    naming what rankkit takes instead (rankkit.app.habits)."""


def _foreign_flags(command, ctx, args) -> None:
    """Raise ForeignFlag for the first word of `args` that is another tool's flag and not one of
    `command`'s own options (values of its options are skipped: `--tag -train` is a tag). Whole
    words: RankLib's -metric2T would otherwise parse as -m etric2T."""
    from rankkit.app import habits

    if ctx.ignore_unknown_options:  # warmup: its options are rankkit.warmup's
        return
    group = isinstance(command, click.Group)  # the words after the command's name are the command's
    takes = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in (*param.opts, *param.secondary_opts):
                takes[opt] = 0 if param.is_flag or param.count else param.nargs
    skip = 0
    for word in args:
        if skip:
            skip -= 1
            continue
        if word == "--":
            return
        if not word.startswith("-") or word == "-":
            if group:
                return
            continue
        flag = word.split("=", 1)[0] if word.startswith("--") else word
        if flag in takes:
            skip = takes[flag] if flag == word else 0
            continue
        _refuse_foreign(command, ctx, flag, habits.advice(_name(command, ctx), flag))


def _name(command, ctx) -> str | None:
    return command.name if ctx.parent is not None else None


def _refuse_foreign(command, ctx, flag: str, advice: str | None) -> None:
    if advice is not None:
        where = f"{command.name} has" if ctx.parent is not None else "rankkit has"
        raise ForeignFlag(f"{where} no option '{flag}': {advice} (see docs/migrating.md)", ctx=ctx)


class _Habits:
    """The parse hook of every command: another tool's flag gets rankkit's name for it (habits)."""

    def parse_args(self, ctx, args):
        _foreign_flags(self, ctx, args)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:  # `-c3`: Click names the flag it could not match
            from rankkit.app import habits

            _refuse_foreign(self, ctx, exc.option_name, habits.advice(_name(self, ctx), exc.option_name))
            raise


class _Command(_Habits, click.Command):
    pass


class _Group(_Habits, click.Group):
    command_class = _Command


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="rankkit", message=_version_text())
def cli():
    """Learning to rank on SVMlight/LETOR files. `rankkit COMMAND --help` gives each command's
    options; the README has worked examples, docs/ the reference. After `pip install`, run `rankkit warmup` once: it
    compiles the kernels ahead of time, so that no later command pauses to compile."""


# -- shared options ---------------------------------------------------------------------------
def _group_file(ctx, param, value):
    """--group: "auto" when not given (look next to the data file), None for 'none', else the path."""
    if value is None:
        return "auto"
    if value == "none":
        return None
    return os.path.join(".", value) if value == "auto" else value


def _reader_options(f, writes_scores: bool = False):
    f = click.option(
        "--group-queries",
        is_flag=True,
        help="Gather the documents of a qid that appears in several places of the file "
        "(default: that is an error)." + (" Scores are still written in input order." if writes_scores else ""),
    )(f)
    f = click.option(
        "--group",
        "group_file",
        metavar="FILE",
        default=None,
        callback=_group_file,
        help="Group file of the data file (LightGBM .query / XGBoost .group: one query size per line, "
        "consecutive lines); its queries get qids 1..G. [default: FILE.query or FILE.group next to the data "
        "file, if there is one; 'none': ignore it]",
    )(f)
    return f


def _scores_reader_options(f):
    return _reader_options(f, writes_scores=True)


def _verbose(f):
    return click.option("-v", "--verbose", is_flag=True, help="Progress and details on stderr.")(f)


def _threads(f):
    return click.option(
        "--threads",
        type=click.IntRange(min=1),
        default=None,
        help="Threads for the parallel kernels (reading, products, per-query sweeps, metrics). "
        "Results are identical for any number. [default: the usable cores not busy with other processes]",
    )(f)


class _progress_bar:
    """A Click progress bar on stderr for long runs (stochastic solvers, the exact path; only on a
    terminal, not under -v). info: a short status shown after the bar."""

    def __init__(self, total: int, label: str):
        self.info = None
        self.bar = click.progressbar(length=total, label=label, file=sys.stderr, item_show_func=lambda _: self.info)
        self.bar.__enter__()
        self.done = 0
        self.closed = False

    def __call__(self, done: int, total: int, info: str | None = None) -> None:
        if self.closed:
            return
        self.info = info
        self.bar.update(done - self.done)
        self.done = done
        if done >= total:
            self.closed = True
            self.bar.__exit__(None, None, None)


def _given(param: str) -> bool:
    """The option was given on the command line (not left at its default)."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(param) is not ParameterSource.DEFAULT


def _metric_names(metrics: tuple) -> tuple:
    """-m as typed, trec_eval's lists spelled out: `-m P.5,10` is P.5 and P.10, `-m P` trec_eval's cutoffs."""
    from rankkit.metrics import expand_metric_names

    return expand_metric_names(metrics)


def _check_depends(options, values: dict) -> None:
    """The one rule of options that apply only with another (rankkit.solvers.options.DEPENDS): one
    given on the command line without what it needs is an error, never silently ignored."""
    from rankkit.solvers.options import check_depends

    check_depends([name for name in options if _given(name)], values)


def _check_significance_options(compared: bool, test_name: str, what: str, *more) -> None:
    """The one rule for the paired test's options: --test and --permutations (and `more`, (flag,
    parameter) pairs) given without anything to compare, or --permutations with another test, are
    errors, never silently ignored."""
    for flag, param in (("--test", "test_name"), ("--permutations", "permutations"), *more):
        if _given(param) and not compared:
            raise click.UsageError(f"{flag} applies only with {what}: the paired test of each against the first")
    if _given("permutations") and test_name != "randomization":
        raise click.UsageError(f"--permutations applies only with --test randomization, not --test {test_name}")


def _outcome_decided_by_its_outputs() -> None:
    """A command that writes its outputs at its end: once one has replaced its file, a signal waits
    for the end of the run (exit 0, every output new); before that it stops the run (128 + N, every
    output as it was). Never 128 + N with an output already replaced (rankkit.interrupts)."""
    from rankkit import interrupts

    interrupts.decided_by_commit()


def _use_threads(n: int | None) -> None:
    threads.apply(n)  # perf: the default is the free usable cores (rankkit/threads.py)


def _dask_option(f):
    return click.option(
        "--dask",
        "dask",
        metavar="ADDRESS",
        default=None,
        help="Run on a Dask cluster: a scheduler address (tcp://host:8786) or local[:N] (a local cluster of N "
        "worker processes). The files are parts, each holding whole queries, read by the workers (pip install "
        "'rankkit[dask]'; docs/dask.md).",
    )(f)


# -- train ------------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="TRAIN MODEL: fit a ranker (primal Newton RankSVM by default).")
@click.argument("files", metavar="TRAIN [TRAIN ...] MODEL", nargs=-1, required=True)
@click.option(
    "--solver",
    type=click.Choice(list(SOLVERS)),
    default=None,
    metavar="NAME",
    help=f"The solver: see the table above (rankkit/solvers/__init__.py has each one's summary). [default: "
    f"{DEFAULT_SOLVER}, or the solver of --loss when {DEFAULT_SOLVER} does not offer it]",
)
@click.option(
    "-C",
    "C",
    type=_Finite(min=0, min_open=True),
    default=None,
    help="Weight of the loss summed over ALL preference pairs (liblinear-ranksvm's -c): "
    "0.5||w||^2 + C*sum_pairs loss. More pairs means a stronger data term, so scale C down "
    "when the number of pairs grows. For newton, newton-pairs, bundle, factorized, pair-sgd, "
    "query-sgd, and pa (its step cap). [default: 1]",
)
@click.option(
    "--tol",
    type=_Finite(min=0, min_open=True),
    default=None,
    help="Stopping rule: Newton decrement / objective for newton solvers [default: 1e-6]; ||gradient||^2 / "
    "objective for nlcg (it implies Newton's rule) [default: 1e-6]; relative duality gap for bundle [default: 1e-4]; "
    "relative change of the objective in one iteration for factorized [default: 1e-6 with --optimizer paper, none "
    "with backtracking].",
)
@click.option(
    "--max-iter",
    type=click.IntRange(min=1),
    default=None,
    help="At most this many iterations (a warning, not an error, if reached). "
    "[default: 100 Newton iterations; 5000 nlcg iterations; 1000 bundle iterations]",
)
@click.option(
    "--loss",
    type=click.Choice(LOSSES),
    default=None,
    help="Pair loss at margin t = w.(x_i - x_j): squared-hinge max(0,1-t)^2; huber "
    "max(0,1-t)^2 - max(0,-t)^2 (quadratic near the margin, linear below 0: robust to outlier pairs); "
    "logistic log(1+exp(-t)) (RankNet); hinge max(0,1-t) (svm_rank's loss, bundle). [default: the solver's "
    "first: squared-hinge for newton]",
)
@click.option(
    "--query-norm",
    is_flag=True,
    help="Divide each query's loss by its number of pairs (svm_rank / Cao et al.), so that queries "
    "with many pairs do not dominate.",
)
@click.option(
    "--query-weights",
    type=click.Path(dir_okay=False),
    default=None,
    help="File of `qid weight` lines multiplying each query's loss (combined with --query-norm).",
)
@click.option(
    "--rescale",
    type=click.Choice(["margin", "margin-sqrt", "margin-delta", "slack"]),
    default=None,
    help="Cost-sensitive pairs (Sect. 6.2), D_ij from --delta: margin (the paper's, = margin-sqrt) "
    "max(0, sqrt(D_ij) - t)^2, bounding D_ij on each inverted pair; margin-delta max(0, D_ij - t)^2 (rankkit's "
    "`margin` before issue 26: bounds D_ij^2); slack D_ij max(0, 1 - t)^2. No pair list for a label-based "
    "delta; --delta swap needs --solver newton-pairs.",
)
@click.option(
    "--delta",
    default=None,
    help="D_ij of --rescale: gain (2^label_i - 2^label_j, the DCG gain difference), a comma-separated "
    "value per label 0,1,2,... (D_ij = u_i - u_j), or swap (|change of NDCG| when i and j swap at their "
    "ideal positions). [default: gain]",
)
@click.option("--lambda", "lam", type=_Finite(min=0), default=None,
              help="Stochastic solvers: regularisation of lambda/2||w||^2 + mean hinge over pairs. [default: 0.1]")
@click.option("--iterations", type=click.IntRange(min=1), default=None,
              help="Stochastic solvers: number of steps. [default: 100000, as in the paper]")
@click.option("--eta", type=click.Choice(["pegasos", "basic", "constant"]), default=None,
              help="Stochastic solvers: learning rate 1/(lambda t) (pegasos), eta0*10/(t+10) (basic, sofia-ml's) or "
              "eta0 (constant). [default: pegasos]")
@click.option("--eta0", type=_Finite(min=0, min_open=True), default=None,
              help="Stochastic solvers: eta0 of --eta basic|constant. [default: 1]")
@click.option("--eta-c", "eta_c", type=_Finite(min=0, min_open=True), default=None,
              help="--eta basic: c of eta0*c/(t+c). [default: 10, sofia-ml's]")
@click.option("--ties", is_flag=True, default=None,
              help="sgd, pegasos, logreg, margin-perceptron, perceptron: also step on a tied pair (same query, same "
              "label) per pair, squared loss with target w.(x_a - x_b) = 0 (sofia-ml's) - Sculley's 'did not help'.")
@click.option("--t0", "t0", type=click.IntRange(min=0), default=None,
              help="pair-sgd, query-sgd: t0 of the step 1/(t + t0); 0 is the papers' 1/t. [default: the curvature "
              "bound, no step overshoots its pair or query]")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Stochastic solvers: pairs per step (averaged). [default: 1]")
@click.option("--sampler", type=click.Choice(["uniform", "indexed", "query-norm", "roc", "sofia", "stream"]),
              default=None,
              help="Stochastic solvers: uniform (exactly uniform over all pairs), indexed (the paper's constant-time "
              "sampler: query, label pair, one document each), sofia (sofia-ml's rank loop: a document, then one of "
              "another label in its query; no step when there is none), query-norm (every query equally likely), "
              "roc (one query, AUC), stream (two "
              "passes over the file without holding it: for files larger than memory). [default: uniform]")
@click.option("--valid", "valid_file", type=click.Path(dir_okay=False), default=None,
              help="Stochastic and factorized solvers: validation file whose MAP and NDCG@10 -v prints at each "
              "checkpoint (factorized: also --patience's early stopping).")
@click.option("-K", "K", type=click.IntRange(min=1), default=None,
              help="--solver factorized: latent dimension of the pair multipliers <v_i, v_j>. [default: 10]")
@click.option("--init-scale", type=_Finite(min=0, min_open=True), default=None,
              help="--solver factorized: standard deviation of the random initial factors. [default: 0.01]")
@click.option("--patience", type=click.IntRange(min=1), default=None,
              help="--solver factorized: stop when the --valid MAP has not improved for this many iterations, "
              "keeping the best.")
@click.option("--optimizer", type=click.Choice(["backtracking", "paper"]), default=None,
              help="--solver factorized: backtracking (the step --eta0 halved for good whenever the objective "
              "would rise: monotone) or paper (Zhang et al.'s Algorithm 1: fixed --eta0, no safeguard, stop on "
              "--tol or --iterations). [default: backtracking]")
@click.option("--save-factors", type=click.Path(dir_okay=False), default=None,
              help="--solver factorized: also write the factors V (one training document per line, K values).")
@click.option(
    "--kernel",
    type=click.Choice(["linear", "poly", "rbf"]),
    default=None,
    help="Non-linear RankSVM (Sect. 6.3): train on the kernel PCA map of the landmarks; the model stores "
    "the landmarks. Without --landmarks, every training document is one (exact; up to 4000 documents).",
)
@click.option("--gamma", type=_Finite(min=0, min_open=True), default=None,
              help="Kernel gamma: rbf exp(-gamma||x-z||^2), poly (gamma x.z + coef0)^degree. [default: 1/features]")
@click.option("--degree", type=click.IntRange(min=1), default=3, show_default=True, help="Degree of the poly kernel.")
@click.option("--coef0", type=_Finite(), default=0.0, show_default=True, help="coef0 of the poly kernel.")
@click.option("--landmarks", type=click.IntRange(min=1), default=None,
              help="Nystrom approximation with this many landmark documents drawn at random (--seed).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every random choice.")
@click.option(
    "--auc",
    is_flag=True,
    help="AUC optimisation: the whole file is one query with binary labels (qids ignored); the model "
    "records the training AUC. A file without qid is one query anyway.",
)
@click.option("--zero-based", is_flag=True, help="Feature indices in TRAIN start at 0 (default: 1).")
@_dask_option
@_reader_options
@_threads
@_verbose
def train(files, dask, solver, C, tol, max_iter, loss, query_norm, query_weights, rescale, delta, lam,
          iterations, eta, eta0, eta_c, ties, t0, batch_size, sampler, valid_file, K, init_scale, patience,
          optimizer, save_factors, kernel, gamma, degree, coef0, landmarks, seed, auc, zero_based, group_queries,
          group_file, threads, verbose):
    """Fit a ranker on TRAIN (SVMlight/LETOR; .gz/.bz2/.xz or - for stdin) and write MODEL.

    \b
    --solver      what it fits                                     its options
    newton        RankSVM by primal truncated Newton, O(nnz +      -C --loss --tol --max-iter
                  n log n) per step (Chapelle & Keerthi; default)  --query-norm --rescale
    newton-pairs  the same on the explicit pair list: per-pair     as newton
                  costs (--delta swap), exact logistic loss
    nlcg          the same squared hinge by non-linear conjugate   as newton
                  gradient (Sect. 2's alternative to Newton)
    bundle        hinge loss (svm_rank's objective), bundle method -C --tol --max-iter
    factorized    Factorized Ranking SVM (Zhang et al. 2015)       -K -C --iterations --valid
                  (--optimizer paper: their Algorithm 1)           --eta0 --optimizer --tol
    sgd pegasos   stochastic steps on sampled pairs (sofia-ml)     --lambda --iterations --eta
    logreg margin-perceptron perceptron                            --sampler --batch-size --ties
    pa romma      passive-aggressive (-C caps the step, default    --iterations --sampler
                  1e7 as sofia-ml's), ROMMA
    pair-sgd      Chapelle & Keerthi's SGD on pairs / whole        -C --iterations --t0
    query-sgd     queries, squared hinge, step 1/(t + t0)
    Any exact solver also takes --kernel rbf|poly (kernel RankSVM).

    MODEL is written atomically: a cron job reading it never sees half a file, and a failed run
    leaves the previous MODEL in place. Several TRAIN files (or quoted globs) are parts, each
    holding whole queries: --solver newton sums them part by part, in this process or on a Dask
    cluster with --dask (the same model bytes); other solvers train on them as if concatenated.
    """
    from rankkit import commands

    _check_depends(("gamma", "degree", "coef0", "landmarks", "delta", "patience", "eta_c"),
                   {"kernel": kernel, "rescale": rescale, "valid_file": valid_file, "eta": eta})
    if len(files) < 2:
        raise click.UsageError("train needs TRAIN and MODEL", ctx=click.get_current_context())
    *train_files, model_file = files
    train_file = train_files[0]
    _outcome_decided_by_its_outputs()  # the model (and factors) are written at the end

    _use_threads(threads)
    if dask is not None or len(train_files) > 1 or commands.is_pattern(train_file):  # parts: rankkit.distributed
        given = [flag for flag, v in (("--kernel", kernel), ("--auc", auc), ("--group-queries", group_queries),
                                      ("--group", group_file != "auto"), ("--valid", valid_file),
                                      ("--sampler", sampler), ("--save-factors", save_factors),
                                      ("--eta-c", eta_c), ("--ties", ties), ("--t0", t0 is not None)) if v]
        commands.train_parts(
            train_files, model_file, dask=dask, solver=solver,
            params={"C": C, "tol": tol, "max_iter": max_iter, "loss": loss, "query_norm": query_norm,
                    **({"rescale": rescale, "delta": "gain" if delta is None else delta} if rescale else {})},
            stochastic={"lam": lam, "iterations": iterations, "eta": eta, "eta0": eta0, "batch_size": batch_size,
                        "seed": seed, "K": K, "init_scale": init_scale, "patience": patience,
                        "optimizer": optimizer},
            query_weights_file=query_weights, zero_based=zero_based, unsupported=given,
            log=_say if verbose else None, warn=_warn)
        return
    commands.train(
        train_file,
        model_file,
        solver=solver,
        params={"C": C, "tol": tol, "max_iter": max_iter, "loss": loss, "query_norm": query_norm,
                **({"rescale": rescale, "delta": "gain" if delta is None else delta} if rescale else {})},
        stochastic={"lam": lam, "iterations": iterations, "eta": eta, "eta0": eta0, "batch_size": batch_size,
                    "sampler": sampler, "seed": seed, "valid_file": valid_file, "K": K, "init_scale": init_scale,
                    "patience": patience, "optimizer": optimizer, "save_factors": save_factors, "eta_c": eta_c,
                    "ties": ties, "t0": t0},
        progress=_progress_bar if (not verbose and sys.stderr.isatty()) else None,
        query_weights_file=query_weights,
        auc=auc,
        kernel=None if kernel is None else {"name": kernel, "gamma": gamma, "degree": degree, "coef0": coef0,
                                            "landmarks": landmarks, "seed": seed},
        zero_based=zero_based,
        group_queries=group_queries,
        group_file=group_file,
        log=_say if verbose else None,
        warn=_warn,
    )


# -- predict ----------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="DATA MODEL [OUT]: one score per line, in input order (or a TREC run).")
@click.argument("files", metavar="DATA MODEL [OUT]", nargs=-1, required=True)
@click.option(
    "--zero-based/--one-based",
    default=None,
    help="Index base of DATA (default: the one the model was trained with).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(PREDICT_FORMATS),
    default="scores",
    show_default=True,
    help="scores: one score per line in input order; trec: a TREC run `qid Q0 docid rank score tag` "
    "(docid from `# docid = X`, else the line number); ranked: each query's documents by score, "
    "as qid, rank, docid, score, label.",
)
@click.option("--tag", default="rankkit", show_default=True, help="Run tag of --format trec.")
@click.option(
    "--model-format",
    type=click.Choice(MODEL_FORMATS),
    default=None,
    help="Format of MODEL. [default: detected from its first line]",
)
@_dask_option
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="With parts (PARTS... MODEL --out-dir DIR): one score file per part, DIR/PART.scores (DIR is "
              "created).")
@_scores_reader_options
@_threads
@_verbose
@_quiet_broken_pipe
def predict(files, dask, out_dir, fmt, tag, zero_based, group_queries, group_file, threads, verbose,
            model_format):
    """Score DATA with MODEL: by default one score per line, in input order, at full precision (%.17g).

    MODEL is a rankkit model, or a linear model of svm_rank/SVMlight, liblinear (liblinear-ranksvm)
    or sofia-ml, scored exactly as that tool's own predict program scores it. MODEL may be `-`
    (standard input; DATA then cannot be) or a .gz file.
    Labels in DATA are optional. Features beyond the model's are ignored (counted with -v).
    OUT defaults to standard output; a file is written atomically.
    With --dask: `predict PARTS... MODEL OUT` (one file, in part order) or `PARTS... MODEL --out-dir DIR`.
    """
    from rankkit import commands

    if _given("tag") and fmt != "trec":  # the one rule: an option that does not apply is an error
        raise click.UsageError(f"--tag applies only with --format trec, not --format {fmt}")
    _use_threads(threads)
    if dask is None and out_dir is None:
        _outcome_decided_by_its_outputs()  # one scores file, written at the end
    parts_given = len(files) > 3 or (files and commands.is_pattern(files[0]))
    if dask is not None or out_dir is not None or parts_given:  # parts, on a Dask cluster or here: rankkit.distributed
        need = 2 if out_dir is not None else 3
        if len(files) < need:
            raise click.UsageError("predict over parts needs PARTS... MODEL " + ("" if out_dir else "OUT"),
                                   ctx=click.get_current_context())
        if out_dir is not None:
            from rankkit.io.atomic import output_directory

            output_directory(out_dir)  # as path and experiment: --out-dir is created
            parts, model_file, out_file = files[:-1], files[-1], None
        else:
            parts, model_file, out_file = files[:-2], files[-2], files[-1]
        for flag, given in (("--group-queries", group_queries), ("--group", group_file != "auto")):
            if given:
                raise click.UsageError(f"{flag} is not offered with {'--dask' if dask is not None else 'parts'}",
                                       ctx=click.get_current_context())
        commands.predict_parts(parts, model_file, out_file=out_file, out_dir=out_dir, dask=dask, zero_based=zero_based,
                               fmt=fmt, model_format=model_format, log=_say if verbose else None)
        return
    if not 2 <= len(files) <= 3:
        raise click.UsageError("predict needs DATA MODEL [OUT] (or PARTS... MODEL OUT)",
                               ctx=click.get_current_context())
    data_file, model_file = files[0], files[1]
    out_file = files[2] if len(files) == 3 else "-"
    commands.predict(
        data_file,
        model_file,
        out_file,
        fmt=fmt,
        tag=tag,
        zero_based=zero_based,
        group_queries=group_queries,
        group_file=group_file,
        log=_say if verbose else None,
        model_format=model_format,
    )


# -- convert ----------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="IN OUT --to FMT: a model as an svm_rank, liblinear or sofia-ml model (or back).")
@click.argument("in_file", metavar="IN")
@click.argument("out_file", metavar="OUT")
@click.option("--to", "to", type=click.Choice(MODEL_FORMATS), required=True, help="Format of OUT.")
@click.option(
    "--model-format",
    type=click.Choice(MODEL_FORMATS),
    default=None,
    help="Format of IN. [default: detected from its first line]",
)
@_verbose
def convert(in_file, out_file, to, model_format, verbose):
    """Write the model IN as a model of another tool (or a foreign model as a rankkit model).

    The tool's own predict program gives the same scores with OUT as rankkit predict with IN.
    Only linear models go into svm_rank, liblinear and sofia-ml files. IN may be `-` or a .gz
    file; OUT (`-`: standard output) is written atomically.
    """
    from rankkit import commands

    _outcome_decided_by_its_outputs()
    commands.convert(in_file, out_file, to, model_format=model_format, log=_say if verbose else None)


# -- eval -------------------------------------------------------------------------------------
@cli.command(name="eval", context_settings=CONTEXT, short_help="DATA SCORES...: NDCG, MAP, ERR, ... graded as trec_eval (or LETOR, LightGBM) grades them, with significance tests.")
@click.argument("files", metavar="DATA SCORES [SCORES ...]", nargs=-1, required=True)
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    help="Metric to report, repeatable: ndcg (whole list), ndcg@K, dcg@K, map, map@K, p@K, mrr, rr@K, err@K, "
    "auc, pairwise-accuracy, kendall-tau, rprec (R-precision); or trec_eval's name, printed as typed: ndcg_cut.K, "
    "P.K, map_cut.K, recip_rank, Rprec (and its lists: -m P.5,10). [default: ndcg@1 ndcg@3 ndcg@5 ndcg@10 map]",
)
@click.option(
    "--convention",
    type=click.Choice(CONVENTION_NAMES),
    default=DEFAULT_CONVENTION,
    show_default=True,
    help="Whose numbers to reproduce: trec (trec_eval, pytrec_eval, ranx, scikit-learn), letor4 / letor3 "
    "(official LETOR scripts), mslr, exp (RankLib / LightGBM / XGBoost). See docs/conventions.md.",
)
@click.option(
    "--empty-query",
    type=click.Choice(EMPTY_QUERY_CHOICES),
    default=None,
    help="Score of a query without relevant documents: 0, 1, or skip it (not averaged). "
    "[default: the convention's]",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "tsv", "json"]),
    default="table",
    show_default=True,
    help="table: aligned text; tsv: tab-separated with a header row; json: {metric: value} for one "
    "SCORES file, a nested object for several or with --per-query.",
)
@click.option("--per-query", is_flag=True, help="Also one row per query.")
@click.option(
    "--test",
    "test_name",
    type=click.Choice(SIGNIFICANCE_TESTS),
    default="randomization",
    show_default=True,
    help="Paired significance test of each SCORES file against the first, per metric.",
)
@click.option(
    "--permutations",
    type=click.IntRange(min=100),
    default=DEFAULT_PERMUTATIONS,
    show_default=True,
    help="Permutations of the randomization test.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the randomization test.")
@click.option(
    "--qrels",
    type=click.Path(dir_okay=False),
    default=None,
    help="Evaluate TREC runs instead: `rankkit eval --qrels QRELS RUN [RUN ...]` "
    "(runs: `qid Q0 docid rank score tag`; qrels: `qid iter docid rel`).",
)
@click.option("--zero-based", is_flag=True, help="Feature indices in DATA start at 0.")
@_dask_option
@_reader_options
@_threads
@_verbose
@_quiet_broken_pipe
def eval_(files, dask, metrics, convention, empty_query, fmt, per_query, test_name, permutations, seed, qrels,
          zero_based, group_queries, group_file, threads, verbose):
    """Evaluate rankings: SCORES files (one score per line, as `rankkit predict` writes) against
    the labels and queries of DATA; or, with --qrels, TREC runs made by any system.

    Prints the mean over queries of each metric in the chosen convention (named in the output).
    Several SCORES files (or runs) are compared side by side, with a paired significance test of
    each against the first.
    """
    from rankkit import commands

    metrics = _metric_names(metrics)
    if qrels is None and len(files) < 2:
        raise click.UsageError("eval needs DATA and at least one SCORES file (or --qrels QRELS RUN ...)")
    parts_given = qrels is None and commands.eval_parts_given(files)
    systems = 1 if dask is not None or parts_given else len(files) if qrels is not None else len(files) - 1
    _check_significance_options(systems >= 2, test_name, "two or more SCORES files (or runs)", ("--seed", "seed"))
    _use_threads(threads)
    if dask is not None or parts_given:  # `eval PARTS... SCORES [--dask]`: rankkit.distributed
        given = [flag for flag, v in (("--qrels", qrels), ("--group-queries", group_queries),
                                      ("--group", group_file != "auto")) if v]
        if given:
            raise click.UsageError(f"{given[0]} is not offered with {'--dask' if dask is not None else 'parts'}",
                                   ctx=click.get_current_context())
        commands.eval_parts(files[:-1], files[-1], dask=dask, metrics=metrics or None, convention=convention,
                            empty_query=empty_query, fmt=fmt, per_query=per_query, zero_based=zero_based, echo=_echo,
                            log=_say if verbose else None, test=test_name, permutations=permutations, seed=seed)
        return
    commands.evaluate(
        files,
        qrels=qrels,
        metrics=metrics or None,
        convention=convention,
        empty_query=empty_query,
        fmt=fmt,
        per_query=per_query,
        test=test_name,
        permutations=permutations,
        seed=seed,
        zero_based=zero_based,
        group_queries=group_queries,
        group_file=group_file,
        echo=_echo,
        log=_say if verbose else None,
        convention_named=_given("convention"),
        warn=_warn,
    )


# -- path -------------------------------------------------------------------------------------
@cli.command(name="path", context_settings=CONTEXT, short_help="TRAIN VALID | --folds DIR: C chosen on validation data along a regularisation path.")
@click.argument("train_file", metavar="[TRAIN VALID | --folds DIR]", required=False)
@click.argument("valid_file", metavar="", required=False)
@click.option("--out-model", type=click.Path(dir_okay=False), default=None, help="Write the chosen model here.")
@click.option("--table", type=click.Path(dir_okay=False), default=None,
              help="Write every point of the path as TSV (C, lambda, iterations, objective, loss, active set, metric).")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Plot the validation metric and the active set against C: .svg (built in) or .png (needs matplotlib).")
@click.option("--plot-kind", type=click.Choice(["metric", "coef", "decision"]), default="metric", show_default=True,
              help="What --plot draws against C: metric (validation metric and active set), coef (the 10 weights, "
              "or kernel coefficients beta, largest at the chosen C), decision (the decision values f(x) of one "
              "validation query's documents: the paper's Fig. 4 along the path).")
@click.option("--plot-query", type=int, default=None,
              help="--plot-kind decision: the qid of the validation query drawn. [default: the first with two labels]")
@click.option("--method", type=click.Choice(["exact", "grid"]), default=None,
              help="exact: the piecewise-linear path of the hinge RankSVM, breakpoint by breakpoint (Zapien et al.); "
              "grid: the Newton solver over a log-spaced C grid, warm-started. [default: exact when the training data "
              "has at most 10,000 pairs and 2,000 documents, grid otherwise; the output says which]")
@click.option("--graph", type=click.Choice(["full", "reduced"]), default="full", show_default=True,
              help="--method exact: all pairs, or the paper's reduced O(n) chain per query (a different problem, see docs/path.md).")
@click.option("--kernel", type=click.Choice(["linear", "rbf", "poly"]), default="linear", show_default=True,
              help="--method exact: kernel of the path (the model stores the training documents for rbf/poly).")
@click.option("--gamma", type=_Finite(min=0, min_open=True), default=None, help="Kernel gamma. [default: 1/features]")
@click.option("--degree", type=click.IntRange(min=1), default=3, show_default=True, help="poly kernel degree.")
@click.option("--coef0", type=_Finite(), default=0.0, show_default=True, help="poly kernel coef0.")
@click.option("--lambda-min", type=_Finite(min=0, min_open=True), default=None,
              help="--method exact: stop at this lambda = 1/C. [default: 1e-6 * the first breakpoint]")
@click.option("--max-events", type=click.IntRange(min=1), default=None,
              help="--method exact: stop after this many events (with a warning). [default: max(10000, 4 x pairs)]")
@click.option("-m", "--metric", "metrics", multiple=True,
              help="Validation metric (any of rankkit eval's), repeatable: the first chooses C, all are reported. "
              "[default: ndcg@10]")
@click.option("--convention", type=click.Choice(CONVENTION_NAMES), default=DEFAULT_CONVENTION, show_default=True,
              help="How the metrics are graded (as rankkit eval --convention).")
@click.option("--select", type=click.Choice(["best", "1se"]), default="best", show_default=True,
              help="best: the highest validation metric; 1se: the smallest C within one standard error of it.")
@click.option("--n-points", type=click.IntRange(min=2), default=30, show_default=True, help="Values of C on the grid.")
@click.option("--ratio", type=_Finite(min=1, min_open=True), default=1e7, show_default=True,
              help="C_max / C_min of the grid; C_min is where w is still nearly zero.")
@click.option("--folds", type=click.Path(file_okay=False, exists=True), default=None,
              help="A LETOR directory: run Fold1..FoldK (train/vali/test.txt each) and report the per-fold choice "
              "and the mean test metric.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Folds run in parallel: worker processes for paths [default: 1]; threads for -C values [default: "
              "--threads, or the free cores; each fold's kernels then run on one thread].")
@click.option("-C", "Cs", type=_Finite(min=0, min_open=True), multiple=True,
              help="With --folds: no path, but every fold trained at this C (repeatable) in one process, as `rankkit "
              "train -C` would; models FoldK.C<C>.model in --out-dir, a table of vali/test metric (TSV: --table).")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="-C with --folds: where the models go. [default: the current directory]")
@click.option("--zero-based", is_flag=True, help="Feature indices start at 0.")
@_dask_option
@_reader_options
@_threads
@_verbose
def path_(dask, train_file, valid_file, out_model, table, plot, plot_kind, plot_query, method, graph, kernel, gamma, degree, coef0, lambda_min,
          max_events, metrics, convention, select, n_points, ratio, folds, jobs, Cs, out_dir, zero_based, group_queries,
          group_file, threads, verbose):
    """Regularisation path and model selection: train along a range of C, evaluate each point on
    VALID, pick C (best or one-standard-error rule) and optionally save the chosen model.

    \b
    rankkit path TRAIN VALID [--out-model M]    one path, C chosen on VALID
    rankkit path --folds DIR                     a path per FoldK of a LETOR directory
    rankkit path --folds DIR -C c1 -C c2 ...     every fold trained at fixed values of C

    With --folds, the grid path is the code `rankkit experiment DIR --solver newton` runs (same
    choices and numbers for the same --n-points, --ratio, -m, --convention, --select); experiment
    also writes the chosen models, test scores, tables and a significance test.
    """
    _check_depends(("gamma", "degree", "coef0", "plot_kind", "plot_query"),
                   {"kernel": kernel, "plot": plot, "plot_kind": plot_kind})
    from rankkit import commands

    _use_threads(threads)
    metric = _metric_names(metrics) if metrics else ("ndcg@10",)
    commands.path(train_file, valid_file, out_model=out_model, table=table, plot=plot, method=method, metric=metric,
                  convention=convention,
                  select=select, n_points=n_points, ratio=ratio, folds=folds, jobs=jobs, zero_based=zero_based,
                  group_queries=group_queries, group_file=group_file, log=_say if verbose else None,
                  echo=_echo_summary,
                  exact={"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0, "graph": graph,
                         "lambda_min": lambda_min, "max_events": max_events}, dask=dask,
                   progress=_progress_bar if (not verbose and sys.stderr.isatty()) else None, Cs=Cs, out_dir=out_dir,
                  plot_kind=plot_kind, plot_query=plot_query)


# -- experiment -------------------------------------------------------------------------------
@cli.command(name="experiment", context_settings=CONTEXT, short_help="DIR | --fold TRAIN VALID TEST: solvers x folds, choices on vali, a test table with significance tests.")
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(file_okay=False, exists=True))
@click.option("--fold", "fold_triples", nargs=3, multiple=True, metavar="TRAIN VALID TEST",
              help="A fold given by its files (repeatable), instead of DIR.")
@click.option("--solver", "solvers", type=click.Choice(list(SOLVERS)), multiple=True,
              help="A solver to run (repeatable); the first is the baseline of the significance tests. "
              "[default: newton]")
@click.option("-m", "--metric", "metrics", multiple=True,
              help="Metric (any of rankkit eval's), repeatable: the first chooses on vali, all are reported. "
              "[default: ndcg@10 map]")
@click.option("--convention", type=click.Choice(CONVENTION_NAMES), default=DEFAULT_CONVENTION, show_default=True,
              help="How the metrics are graded (as rankkit eval --convention).")
@click.option("--select", type=click.Choice(["best", "1se"]), default="best", show_default=True,
              help="best: the highest vali metric; 1se: the most regularised point within one standard error of it.")
@click.option("--grid", "grid_specs", multiple=True, metavar="SOLVER:PARAM=V1,V2,...",
              help="Replace a solver's default grid along PARAM (C, lambda, K or gamma; repeatable, several PARAMs "
              "make a product), e.g. pegasos:lambda=1e-2,1e-3,1e-4.")
@click.option("--n-points", type=click.IntRange(min=1), default=30, show_default=True,
              help="Points of the default C path (exact solvers, as rankkit path) and lambda grid (stochastic).")
@click.option("--ratio", type=_Finite(min=1, min_open=True), default=1e7, show_default=True,
              help="C_max / C_min of the default C path.")
@click.option("--kernel", type=click.Choice(["rbf", "poly"]), default=None,
              help="Kernel RankSVM for the exact solvers: the grid is gamma x C (see docs/experiment.md).")
@click.option("--landmarks", type=click.IntRange(min=1), default=None,
              help="--kernel: Nystrom landmarks (drawn with --seed). [default: every training document, up to 4000]")
@click.option("--degree", type=click.IntRange(min=1), default=3, show_default=True, help="--kernel poly: degree.")
@click.option("--coef0", type=_Finite(), default=0.0, help="--kernel poly: coef0. [default: 0]")
@click.option("--iterations", type=click.IntRange(min=1), default=None,
              help="Stochastic and factorized solvers: steps. [default: the solver's, as rankkit train]")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of every random choice (stochastic solvers, landmarks, the randomization test).")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="Where OUT/FoldK/SOLVER.model, .test.scores, .vali.tsv and OUT/results.json, results.tsv, "
              "results.txt and SOLVER.vali.svg go (created). A re-run reuses the folds whose inputs and settings "
              "are unchanged. [default: write nothing, print the table]")
@click.option("--no-resume", is_flag=True, help="Refit every fold even where OUT holds matching results.")
@click.option("--format", "fmt", type=click.Choice(["table", "tsv", "json"]), default="table", show_default=True,
              help="What stdout shows: aligned text, results.tsv or results.json.")
@click.option("--test", "test_name", type=click.Choice(SIGNIFICANCE_TESTS), default="randomization",
              show_default=True, help="Paired significance test of each solver against the first.")
@click.option("--permutations", type=click.IntRange(min=100), default=DEFAULT_PERMUTATIONS, show_default=True,
              help="Permutations of the randomization test.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Folds run side by side (each on one kernel thread); the results do not depend on it.")
@click.option("--zero-based", is_flag=True, help="Feature indices start at 0.")
@click.option("--group-queries", is_flag=True,
              help="Gather the documents of a qid that appears in several places of a file (default: an error).")
@_threads
@_verbose
def experiment_(directory, fold_triples, solvers, metrics, convention, select, grid_specs, n_points, ratio, kernel,
                landmarks, degree, coef0, iterations, seed, out_dir, no_resume, fmt, test_name, permutations, jobs,
                zero_based, group_queries, threads, verbose):
    """The LETOR protocol in one command: on each fold, every --solver over its grid, the choice on
    vali by the first -m, the chosen model scored on test; a table per fold and the mean over the
    folds, and a paired significance test of each solver against the first over all test queries.

    \b
    rankkit experiment MQ2008 --solver newton --solver pegasos -m map -m ndcg@10 --out-dir out
    rankkit experiment --fold tr1 va1 te1 --fold tr2 va2 te2 --grid pegasos:lambda=1e-3,1e-4 ...

    Default grids: C along a warm-started path for newton, newton-pairs, bundle (rankkit path's);
    lambda from 3 R2 / T up by 1e4 for the stochastic solvers (R2: the mean squared distance of two
    documents of a query; T: the steps); K x C for factorized; gamma x C with --kernel.

    Edges: a choice at the first or last value of a C or lambda grid extends the grid past that end
    (same log spacing, at most 10 points, until the model stops changing or a point diverges) until
    the choice is interior. A choice still at an end is marked [low edge] / [high edge] in the table,
    in FoldK/SOLVER.vali.tsv and as "at_edge" in results.json, and counted under the table.

    Constant models: a point whose vali scores are constant within every query (all weights zero) is
    never chosen, and marked in vali.tsv. If every point is, the fold and solver fail with one line
    and exit 2; under a file-order convention, test figures show (N tied) queries with tied scores
    of two labels in the top k.
    """
    from rankkit import commands

    _use_threads(threads)
    _check_depends(("degree", "coef0", "landmarks"), {"kernel": kernel})
    _check_significance_options(len(solvers or ("newton",)) >= 2, test_name, "two or more --solver")
    kernel_opts = None
    if kernel is not None:
        kernel_opts = {"name": kernel, "degree": degree, "coef0": coef0, "landmarks": landmarks}
    commands.experiment(directory, fold_triples, solvers=solvers or ("newton",), metrics=_metric_names(metrics),
                        convention=convention, select=select, grid_specs=grid_specs, n_points=n_points, ratio=ratio,
                        kernel=kernel_opts, iterations=iterations, seed=seed, out_dir=out_dir, jobs=jobs,
                        test=test_name, permutations=permutations, zero_based=zero_based,
                        group_queries=group_queries, fmt=fmt, echo=_echo_summary, log=_say if verbose else None,
                        resume=not no_resume,
                        progress=_progress_bar if (not verbose and sys.stderr.isatty()) else None, warn=_warn)


# -- exit statuses and signals -----------------------------------------------------------------
_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")  # each raises errors.Interrupted (rankkit.interrupts)


def _install_signal_handlers() -> None:
    import signal

    from rankkit import interrupts

    for name in _SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_IGN:  # nohup, or a background job: keep ignoring
                continue
            signal.signal(sig, interrupts.on_signal)
        except (ValueError, OSError):  # not the main thread (rankkit.cli.main called from a thread)
            return
    interrupts.install_unraisable_hook()


def ignore_signals() -> None:
    """The outcome is decided (a complete result, or an interruption being reported): a late signal
    must not turn it into a death by signal while Python shuts down."""
    import signal

    for name in _SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (ValueError, OSError):
                return


@cli.command(name="warmup", add_help_option=False,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
             short_help="Compile the kernels ahead of time (once after installing: no command then pauses to compile).")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def warmup(args):
    """`python -m rankkit.warmup`, under the rankkit command (`rankkit warmup --help` lists its
    options). It replaces this process (exec): the build drives the CLI's own commands to learn which
    kernel calls to compile, so it sits above this module, and one process keeps one exit status and
    one answer to a signal."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "rankkit.warmup", "--prog", "rankkit warmup", *args])


def _quiet_after_the_outcome() -> None:
    """The outcome is decided and said in one line: what is still shutting down in other threads
    prints nothing more. A local Dask cluster interrupted while it starts or runs closes in its own
    thread and logged 20-30 lines (and sometimes a CommClosedError traceback) after rankkit's line;
    its loggers, threads' exceptions and objects collected at exit stay silent."""
    if "distributed" not in sys.modules:
        return
    import logging
    import threading

    prefixes = ("distributed", "tornado", "asyncio", "bokeh")
    for name in [*prefixes, *[n for n in list(logging.root.manager.loggerDict) if n.startswith(prefixes)]]:
        lg = logging.getLogger(name)
        lg.handlers, lg.propagate, lg.disabled = [], False, True
    threading.excepthook = lambda args: None
    sys.unraisablehook = lambda args: None


def _interrupted_exit() -> None:
    import signal

    from rankkit import console, interrupts

    ignore_signals()
    _quiet_after_the_outcome()
    signum = interrupts.received()
    console.say(f"rankkit: interrupted by {signal.Signals(signum).name}")
    sys.exit(128 + signum)


def main(argv=None) -> None:
    """Console entry point: the one place that maps outcomes to exit statuses."""
    from rankkit import console

    threads.pause_gc()  # perf: off during the start, back on later (rankkit/threads.py)
    console.guard_standard_fds()
    console.whole_writes_stdout()  # a write the device takes only in part raises (a full disk)
    # the package's first handlers (rankkit/__init__.py: one line, 128 + N, at once) stay until the
    # `try` below installs the CLI's own: nothing before it opens or writes anything, and a signal
    # landing between installing them and the `try` would escape as a traceback
    from rankkit import limits

    try:
        limits.prepare()  # before numpy is imported
    except RankkitError as exc:
        console.say(f"rankkit: error: {exc}")
        sys.exit(exc.exit_code)
    problem = threads.check_environment()  # before numba is imported
    if problem is None:
        from rankkit import resources

        try:
            resources.memory_limit_setting()
        except RankkitError as exc:
            problem = str(exc)
    if problem is not None:
        console.say(f"rankkit: error: {problem}")
        sys.exit(EXIT_USAGE)
    try:
        os.getcwd()
    except OSError:  # deleted under the shell that started us: no relative path can be resolved
        console.say("rankkit: error: the working directory no longer exists (cd to an existing one)")
        sys.exit(EXIT_USAGE)
    try:
        _install_signal_handlers()
        processes.workers_in_their_own_session()
        cli.main(args=argv, prog_name="rankkit", standalone_mode=False)
    except click.exceptions.Exit as exc:  # --help, --version: their text must have reached stdout
        ignore_signals()
        if exc.exit_code == 0:
            _finish_stdout()
        sys.exit(exc.exit_code)
    except BaseException as exc:
        # A signal can surface as any exception (numba reports one raised during a kernel call as
        # SystemError): whatever unwound, the run was interrupted.
        from rankkit import interrupts

        if interrupts.received() is not None:
            _interrupted_exit()
        _fail(exc)
    ignore_signals()  # done: the outputs are complete, and exit 0 says so
    _finish_stdout()
    sys.exit(0)


def _finish_stdout() -> None:
    """Everything written to stdout reached it, or exit 2 in one line (full, an I/O error; a closed
    stdout refuses the write itself, console._ClosedStdout); a reader that went away (`| head`) is
    not an error."""
    from rankkit import console

    try:
        sys.stdout.flush()
    except BrokenPipeError:
        console.silence_stdout()
    except OSError as exc:
        console.say(f"rankkit: error: {console.stdout_error(exc)}")
        sys.exit(EXIT_USAGE)


def _stdout_fails(exc: BaseException) -> bool:
    """The error came from click writing to stdout (its help and version text), not from a file."""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_globals.get("__name__") == "click.utils" and frame.f_code.co_name == "echo":
            return frame.f_locals.get("file") in (sys.stdout, getattr(sys.stdout, "buffer", None))
        tb = tb.tb_next
    return False


def _command(exc) -> str:
    ctx = getattr(exc, "ctx", None)
    name = getattr(getattr(ctx, "command", None), "name", None)
    return f"{name} " if name and ctx.parent is not None else ""


def _fail(exc: BaseException) -> None:
    """One line on stderr and the exit status of an exception that ended the command."""
    from rankkit import console

    if isinstance(exc, SystemExit):
        raise exc
    if isinstance(exc, ForeignFlag):  # the message names its own page
        console.say(f"rankkit: error: {exc.format_message()}")
        sys.exit(EXIT_USAGE)
    if isinstance(exc, click.ClickException):  # usage errors: click's message, one line, exit 2
        console.say(f"rankkit: error: {' '.join(exc.format_message().split())} (see rankkit {_command(exc)}--help)")
        sys.exit(EXIT_USAGE)
    if isinstance(exc, (click.exceptions.Abort, KeyboardInterrupt)):
        console.say("rankkit: interrupted")
        sys.exit(130)
    if isinstance(exc, RankkitError):
        console.say(f"rankkit: error: {exc}")
        sys.exit(exc.exit_code)
    if isinstance(exc, BrokenPipeError):  # `rankkit predict ... | head`: not an error; silence the final flush
        console.silence_stdout()
        sys.exit(0)
    if isinstance(exc, OSError) and _stdout_fails(exc):  # click's own writes (--help)
        console.say(f"rankkit: error: {console.stdout_error(exc)}")
        sys.exit(EXIT_USAGE)
    from rankkit import limits

    short = limits.out_of_resources(exc)  # exit 3: whichever allocation, file, thread or process failed
    if short is not None:
        console.say(f"rankkit: error: {short}")
        sys.exit(short.exit_code)
    if not isinstance(exc, Exception) or os.environ.get("RANKKIT_DEBUG"):
        raise exc
    # a bug: one line, the traceback only on request
    console.say(f"rankkit: internal error: {exc.__class__.__name__}: {exc} "
                "(set RANKKIT_DEBUG=1 for a traceback, and please report it)")
    sys.exit(EXIT_FAILURE)
