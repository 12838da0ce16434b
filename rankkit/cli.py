"""The `rankkit` command: train, predict, eval.

This module parses options and calls the library; nothing else. It imports neither numpy nor numba
at module level, so `rankkit --help` is instant. Exit statuses are decided in one place (`main`):
0 success, 2 bad usage or bad input (one line on stderr, never a traceback), 1 internal error.
"""

from __future__ import annotations

import os
import sys

import click

from rankkit import __version__
from rankkit.errors import EXIT_FAILURE, EXIT_USAGE, RankkitError
from rankkit.solvers import DEFAULT_SOLVER, SOLVERS

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def _warn(msg: str) -> None:
    click.echo(f"rankkit: warning: {msg}", err=True)


def _quiet_broken_pipe(fn):
    """`rankkit predict ... | head` closes the pipe early: that is not an error. Click would turn
    the BrokenPipeError into exit 1, so end the command here with status 0 and a silent stdout."""

    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise click.exceptions.Exit(0) from None

    return wrapper


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="rankkit")
def cli():
    """Learning to rank on SVMlight/LETOR files.

    \b
    rankkit train TRAIN MODEL          fit a ranker (primal Newton RankSVM by default)
    rankkit predict DATA MODEL [OUT]   one score per line, in input order
    rankkit eval DATA SCORES           NDCG@k and MAP, LETOR 4.0 conventions
    """


# -- shared options ---------------------------------------------------------------------------
def _reader_options(f):
    f = click.option(
        "--group-queries",
        is_flag=True,
        help="Gather the documents of a qid that appears in several places of the file "
        "(default: that is an error). Scores are still written in input order.",
    )(f)
    return f


def _verbose(f):
    return click.option("-v", "--verbose", is_flag=True, help="Progress and details on stderr.")(f)


# -- train ------------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT)
@click.argument("train_file", metavar="TRAIN")
@click.argument("model_file", metavar="MODEL")
@click.option(
    "--solver",
    type=click.Choice(sorted(SOLVERS)),
    default=DEFAULT_SOLVER,
    show_default=True,
    help="; ".join(f"{s.name}: {s.summary}" for s in SOLVERS.values()),
)
@click.option(
    "-C",
    "C",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Weight of the loss summed over ALL preference pairs (liblinear-ranksvm's -c): "
    "0.5||w||^2 + C*sum_pairs loss. More pairs means a stronger data term, so scale C down "
    "when the number of pairs grows.",
)
@click.option(
    "--tol",
    type=click.FloatRange(min=0, min_open=True),
    default=1e-6,
    show_default=True,
    help="Stop when the Newton decrement divided by the objective is below this.",
)
@click.option(
    "--max-iter",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="At most this many Newton iterations (a warning, not an error, if reached).",
)
@click.option("--zero-based", is_flag=True, help="Feature indices in TRAIN start at 0 (default: 1).")
@_reader_options
@_verbose
def train(train_file, model_file, solver, C, tol, max_iter, zero_based, group_queries, verbose):
    """Fit a ranker on TRAIN (SVMlight/LETOR; .gz/.bz2/.xz or - for stdin) and write MODEL.

    MODEL is written atomically: a cron job reading it never sees half a file, and a failed run
    leaves the previous MODEL in place.
    """
    from rankkit import commands

    commands.train(
        train_file,
        model_file,
        solver=solver,
        params={"C": C, "tol": tol, "max_iter": max_iter},
        zero_based=zero_based,
        group_queries=group_queries,
        log=_say if verbose else None,
        warn=_warn,
    )


# -- predict ----------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT)
@click.argument("data_file", metavar="DATA")
@click.argument("model_file", metavar="MODEL")
@click.argument("out_file", metavar="[OUT]", required=False, default="-")
@click.option(
    "--zero-based/--one-based",
    default=None,
    help="Index base of DATA (default: the one the model was trained with).",
)
@_reader_options
@_verbose
@_quiet_broken_pipe
def predict(data_file, model_file, out_file, zero_based, group_queries, verbose):
    """Score DATA with MODEL: one score per line, in input order, at full precision (%.17g).

    Labels in DATA are optional. Features beyond the model's are ignored (counted with -v).
    OUT defaults to standard output; a file is written atomically.
    """
    from rankkit import commands

    commands.predict(
        data_file,
        model_file,
        out_file,
        zero_based=zero_based,
        group_queries=group_queries,
        log=_say if verbose else None,
    )


# -- eval -------------------------------------------------------------------------------------
@cli.command(name="eval", context_settings=CONTEXT)
@click.argument("data_file", metavar="DATA")
@click.argument("scores_file", metavar="SCORES")
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    help="Metric to report, repeatable: ndcg@K, dcg@K, p@K, map. "
    "[default: ndcg@1 ndcg@3 ndcg@5 ndcg@10 map]",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "tsv", "json"]),
    default="table",
    show_default=True,
    help="table: aligned text; tsv: metric<TAB>value lines; json: one object {metric: value}.",
)
@click.option("--zero-based", is_flag=True, help="Feature indices in DATA start at 0.")
@_reader_options
@_quiet_broken_pipe
def eval_(data_file, scores_file, metrics, fmt, zero_based, group_queries):
    """Evaluate SCORES (one per line, as `rankkit predict` writes) against the labels of DATA.

    Means over all queries, LETOR 4.0 conventions: gains 0/1/3 for labels 0/1/2, positions 1 and
    2 undiscounted and position p>=3 divided by log2(p), NDCG@k = 0 for a query with fewer than k
    documents or no relevant document (averaged in), relevant = label 1 or 2, ties in score
    broken by file order.
    """
    from rankkit import commands

    commands.evaluate(
        data_file,
        scores_file,
        metrics=metrics or None,
        fmt=fmt,
        zero_based=zero_based,
        group_queries=group_queries,
    )


def main(argv=None) -> None:
    """Console entry point: the one place that maps outcomes to exit statuses."""
    try:
        cli.main(args=argv, prog_name="rankkit", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors: click's own message, exit 2
        exc.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort:
        click.echo("rankkit: interrupted", err=True)
        sys.exit(130)
    except RankkitError as exc:
        click.echo(f"rankkit: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("rankkit: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        # e.g. `rankkit predict ... | head`: not an error; silence the final flush
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        sys.exit(0)
    except MemoryError:
        click.echo("rankkit: error: out of memory", err=True)
        sys.exit(EXIT_FAILURE)
    except Exception as exc:  # a bug: one line, the traceback only on request
        if os.environ.get("RANKKIT_DEBUG"):
            raise
        click.echo(
            f"rankkit: internal error: {exc.__class__.__name__}: {exc} "
            "(set RANKKIT_DEBUG=1 for a traceback, and please report it)",
            err=True,
        )
        sys.exit(EXIT_FAILURE)
    sys.exit(0)

