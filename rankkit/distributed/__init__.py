"""Training, prediction and evaluation on a Dask cluster (`--dask ADDRESS`).

    fit_newton(parts, client, *, C, loss, tol, max_iter, query_norm, rescale, delta,
               query_weights=None, zero_based=False, log=None) -> (FitResult, facts)

Dask is imported only when a function here runs (`pip install 'rankkit[dask]'`).
"""

from __future__ import annotations


def fit_newton(parts, client, **kwargs):
    from rankkit.distributed.newton import fit_newton as fit

    return fit(parts, client, **kwargs)


fit_newton.__doc__ = """Train the Newton RankSVM on parts on a Dask cluster: see rankkit.distributed.newton.fit_newton."""

__all__ = ["fit_newton"]
