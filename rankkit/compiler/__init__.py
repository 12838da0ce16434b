"""How rankkit's numba kernels are compiled and which compiled code a call runs: dispatch.py (the
`@njit` every kernel module uses), jit.py (numba's JIT and its disk cache), aot.py (the loader of
kernels compiled ahead of time), build.py and table.py (the ahead-of-time build and the calls it
compiles). Used by io, metrics, sorting, objectives and solvers alike.

Layer: kernels and data. It imports only the base (console, threads, processes); build.py finds
the kernels by walking the package's folder by name, never by importing a layer above.
"""
