"""The one place that decides how kernels are compiled, and which compiled code a call runs.

Every kernel module does `from rankkit.compiler.dispatch import njit`. No fastmath: objective,
gradient and Hessian-vector sums must be reproducible for the line search and for the brute-force
comparisons. Kernels release the GIL (rankkit.threads runs them side by side) and follow numpy's
error model (a division by zero gives inf or nan, it does not raise).

`@njit` makes a `Kernel`, which imports nothing heavy. A call from Python runs, in this order:

1. the kernel's ahead-of-time code for exactly these argument types, if `make` (python -m
   rankkit.warmup) built it for this source, this Python and this CPU (rankkit.compiler.aot):
   a plain extension module, so such a run never imports numba or loads LLVM (~0.4 s of CPU and
   ~110 MB of memory per process);
2. otherwise numba's dispatcher, made on first need (rankkit.compiler.jit: numba's JIT with a
   disk cache that cannot fail a run).

Both run the same Python function compiled by the same numba and LLVM for the same CPU and
features, so they give the same bits (tests/test_aot.py checks whole runs against each other).
Calls from one kernel to another happen inside compiled code and never come back here.
"""

from __future__ import annotations

import numpy as np

DEFAULTS = {"nogil": True, "fastmath": False, "error_model": "numpy"}

_recording: set | None = None  # (module, name, key) of every call from Python, while recording
_kernels: list = []  # every Kernel made, in the order their modules were imported


def kernels() -> list:
    """Every kernel of the modules imported so far."""
    return list(_kernels)


def arg_key(args) -> tuple | None:
    """What decides numba's type of each argument, as plain values; None if any argument is of a
    kind ahead-of-time code is never built for (None, tuples, objects). Arrays: (dtype, ndim,
    layout C=1/F=2/A=0 as numba's typeof decides it, writeable, aligned); scalars: their dtype
    (a Python int as int64, float as float64, bool as bool, as numba types them)."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            f = a.flags.num  # C_CONTIGUOUS 1, F_CONTIGUOUS 2, ALIGNED 0x100, WRITEABLE 0x400
            key.append((a.dtype.str, a.ndim, 1 if f & 1 else (2 if f & 2 else 0), bool(f & 0x400), bool(f & 0x100)))
        elif t is bool:
            key.append("|b1")
        elif t is int:
            if not -(1 << 63) <= a < (1 << 63):
                return None
            key.append("<i8")
        elif t is float:
            key.append("<f8")
        elif isinstance(a, np.generic) and a.dtype.kind in "biuf":
            key.append(a.dtype.str)
        else:
            return None
    return tuple(key)


class Kernel:
    """A jitted function: `py_func` compiled ahead of time or by numba, whichever has the code
    for the arguments (see the module's docstring). Attributes other than its own are numba's
    dispatcher's (`kernel.signatures`, ...)."""

    def __init__(self, func, options: dict, cache: bool = True):
        self.py_func = func
        self.options = options
        self.cache = cache
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__module__ = func.__module__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        code = func.__code__
        self._nargs = code.co_argcount
        self._defaults = func.__defaults__ or ()
        self._aot = None  # {key: compiled function}, filled on the first call
        self._dispatcher = None

    @property
    def dispatcher(self):
        """numba's dispatcher for this kernel (imports numba on first use)."""
        d = self._dispatcher
        if d is None:
            from rankkit.compiler import jit

            jit.register_types(Kernel, NumbaGlobal)
            d = self._dispatcher = jit.dispatcher(self)
        return d

    def __call__(self, *args, **kwargs):
        if kwargs:
            return self.dispatcher(*args, **kwargs)
        missing = self._nargs - len(args)
        if 0 < missing <= len(self._defaults):  # defaults passed explicitly: one signature per arity
            args = args + self._defaults[len(self._defaults) - missing:]
        exports = self._aot
        if exports is None:
            from rankkit.compiler import aot

            exports = self._aot = aot.exports(self)
        if exports or _recording is not None:
            key = arg_key(args)
            if _recording is not None and key is not None:
                _recording.add((self.__module__, self.__qualname__, key))
            fn = exports.get(key) if exports else None
            if fn is not None:
                return fn(*args)
        return self.dispatcher(*args)

    def __getattr__(self, name):
        if name.startswith("_"):  # private and special names are the kernel's own (copy, pickle)
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        return f"<rankkit kernel {self.__module__}.{self.__qualname__}>"

    def __reduce__(self):
        return self.__qualname__  # pickled by name, as the module-level function it decorates


class NumbaGlobal:
    """A numba object that kernels use as a global (an @intrinsic, ...), made by `factory` the first
    time numba types a kernel that uses it, so that defining it does not import numba."""

    def __init__(self, factory):
        self._factory = factory
        self._obj = None

    def get(self):
        if self._obj is None:
            self._obj = self._factory()
        return self._obj


def njit(*args, **kwargs):
    """numba.njit with rankkit's defaults and ahead-of-time code; usable bare (`@njit`) or with
    options (`@njit(parallel=True)`, `@njit(cache=False)`)."""
    opts = dict(DEFAULTS)
    opts.update(kwargs)
    cache = opts.pop("cache", True)

    def decorate(func):
        kernel = Kernel(func, opts, cache)
        _kernels.append(kernel)
        return kernel

    if len(args) == 1 and callable(args[0]) and not kwargs:
        return decorate(args[0])
    if args:
        raise TypeError("rankkit kernels take no explicit signature")
    return decorate


def compile_seconds() -> float:
    """Wall seconds this process has spent compiling kernels with numba's JIT (0 if it never
    loaded numba: every call ran ahead-of-time code), for timings that name compiling apart."""
    import sys

    jit = sys.modules.get("rankkit.compiler.jit")
    return jit.compile_seconds() if jit is not None else 0.0


def start_recording() -> None:
    """Record the kernel calls made from Python from now on (what rankkit.compiler.aot builds)."""
    global _recording
    _recording = set()


def stop_recording() -> set:
    global _recording
    calls, _recording = _recording or set(), None
    return calls
