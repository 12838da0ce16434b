"""The regularisation path algorithms: the warm-started grid path and the fold protocol (grid.py), the
exact piecewise-linear path of Zapien et al. (exact.py, its sweeps in _path_kernels.py). The use
case over both (the path on datasets, the chosen model, the path plots' curves) that `rankkit path`
and rankkit.regularization_path call is rankkit/selection.py, a layer up.

Layer: algorithms (tests/test_architecture.py's LAYERS), the whole package: it may import solvers,
objectives, io, kernels and data and the base, never a use case or a face.
"""
