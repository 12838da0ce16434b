"""Training on parts: one fit of solver newton over files that each hold whole queries, in one
process or on a Dask cluster, for every face (`rankkit train PARTS... [--dask]`,
RankSVM.fit_parts, DaskRankSVM, rankkit.distributed.fit_newton).

    cluster.py   where the work runs: ADDRESS (tcp://..., local[:N]) or a Client; cluster failures
                 as one line (ClusterError, public as rankkit.ClusterError)
    worker.py    what runs where a part lives: its data and objective, rebuilt if lost; plain
                 functions that a Dask worker unpickles by this module path
    newton.py    the truncated Newton driver over per-part partial sums (Problem on a cluster,
                 LocalProblem in this process); fit_parts, the one fit on parts

Layer: use cases (tests/test_architecture.py's LAYERS), beside rankkit.training: it may import
the use cases beside it, the algorithms (solvers, paths), io, objectives, kernels and data and the
base; never a face (the Dask face, rankkit.distributed and rankkit.dask, is over it). Dask itself
is imported only when a cluster is used.
"""
