"""Choosing C: the warm-started grid path and the fold protocol (grid.py), the exact piecewise-linear
path of Zapien et al. (exact.py), and the Python API over both (select.py)."""
