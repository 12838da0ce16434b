"""rankkit: learning to rank from SVMlight/LETOR files on the command line.

This module stays import-light (no numpy, no numba) so that `rankkit --help` is instant.
"""

__version__ = "0.2.0"
