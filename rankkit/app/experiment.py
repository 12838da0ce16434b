"""`rankkit experiment`: the options checked, rankkit.experiment.experiment run, its results shown
(text on stdout; with --format tsv or json the same tables as OUT/results.tsv and OUT/results.json)."""

from __future__ import annotations

import json

from rankkit.errors import UsageError
from rankkit.experiments import GRID_PARAMETERS, Fold, as_folds, experiment as run, results_text, results_tsv


def parse_grid(specs) -> dict:
    """["pegasos:lambda=1e-3,1e-4", "factorized:K=5,10"] -> {"pegasos": {"lambda": [...]}, ...}."""
    grids: dict = {}
    for spec in specs or ():
        solver, sep, rest = spec.partition(":")
        name, eq, values = rest.partition("=")
        if not sep or not eq or not solver or name not in GRID_PARAMETERS:
            raise UsageError(f"--grid {spec!r}: write SOLVER:PARAM=v1,v2,... with PARAM one of "
                             f"{', '.join(GRID_PARAMETERS)} (e.g. pegasos:lambda=1e-3,1e-4)")
        try:
            vals = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise UsageError(f"--grid {spec!r}: the values must be numbers") from None
        grids.setdefault(solver, {})[name] = vals
    return grids


def experiment(directory=None, fold_triples=(), solvers=("newton",), metrics=(), convention=None, select="best",
               grid_specs=(), n_points=30, ratio=1e7, kernel=None, iterations=None, seed=0, out_dir=None, jobs=1,
               test="randomization", permutations=10_000, zero_based=False, group_queries=False, fmt="table",
               echo=print, log=None, progress=None, warn=None, resume=True):
    """`rankkit experiment DIR` or `--fold TRAIN VALID TEST ...`."""
    if (directory is None) == (not fold_triples):
        raise UsageError("give a LETOR directory (Fold1..FoldK) or --fold TRAIN VALID TEST triples, one of the two")
    folds = as_folds(directory) if directory is not None else [Fold(f"Fold{i + 1}", *t)
                                                               for i, t in enumerate(fold_triples)]
    kwargs = {"convention": convention} if convention is not None else {}
    results = run(folds, solvers or ("newton",), metrics or None, select=select, grids=parse_grid(grid_specs),
                  n_points=n_points, ratio=ratio, kernel=kernel, iterations=iterations, seed=seed, out_dir=out_dir,
                  jobs=jobs, test=test, permutations=permutations, zero_based=zero_based, group_queries=group_queries,
                  resume=resume, log=log, progress=progress, warn=warn, **kwargs)  # the default words: the CLI's
    if fmt == "json":
        echo(json.dumps(results, allow_nan=False))
    elif fmt == "tsv":
        for line in results_tsv(results):
            echo(line)
    else:
        for line in results_text(results):
            echo(line)
        if out_dir is not None:
            echo(f"# models, test scores and vali tables in {out_dir}/FoldK/; results.json, results.tsv, "
                 f"*.vali.svg in {out_dir}/")
    return results
