"""Choosing C: the warm-started grid path and the fold protocol (grid.py), the exact piecewise-linear
path of Zapien et al. (exact.py, its sweeps in _path_kernels.py), and select.py, the use case over
both (the path on datasets, the chosen model, the path plots' curves) that `rankkit path` and
rankkit.regularization_path (rankkit/regularization.py, the Python face) call.

Layers (tests/test_architecture.py's LAYERS): grid.py, exact.py and _path_kernels.py are
algorithms: they may import solvers, objectives, io, kernels and data and the base, never a use
case or a face. select.py is a use case: it may also import rankkit.training and rankkit.plot,
never a face (no estimator).
"""
