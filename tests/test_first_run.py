"""Issue 39, the first run: what `make demo` on a fresh clone relies on to reach its first model
sooner (the Makefile's venv, KERNEL_DEPS_STAMP and FIRST_STAMP recipes).

The demo's first kernel build starts as soon as numpy and numba are installed, from the checkout
(PYTHONPATH), while pip installs scipy, click and rankkit: so `python -m rankkit.warmup --first`'s
ahead-of-time path and every module whose kernels it builds must import neither click nor scipy,
the Makefile must install exactly pyproject's numpy and numba first, and a build made from the
checkout must carry the fingerprint the installed rankkit computes (else the demo's train would
compile again). The venv is made without ensurepip's own install of pip when the Python bundles
its wheels, and with `python -m venv` as before when it does not (slow tests: they make venvs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from rankkit.compiler import aot
from tests.test_cli import ROOT, _env

NO_CLICK_OR_SCIPY = r"""
import sys
sys.modules["click"] = None  # an import of either raises ImportError
sys.modules["scipy"] = None
import importlib
from rankkit import warmup
from rankkit.compiler import build
for module in sorted({m for m, _, _ in build.first_table()}):  # what the build's processes import
    importlib.import_module(module)
done = []
warmup.build_ahead = lambda jobs, progress=None, calls=None, add=True: done.append(calls) or (0.0, len(calls))
status = warmup.main(["--first", "--force", "-q"])
assert status == 0 and done == [build.first_table()], (status, done)
print("ok")
"""


def test_the_first_build_needs_neither_click_nor_scipy():
    """make demo runs `python -m rankkit.warmup --first` before pip has installed click and scipy:
    the warmup's ahead-of-time path and the modules of table.FIRST must not import them (the
    build's compiling itself is stubbed here: test_aot.py builds for real)."""
    proc = subprocess.run([sys.executable, "-c", NO_CLICK_OR_SCIPY], env=_env(), capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_a_build_from_the_checkout_has_the_installed_fingerprint(tmp_path):
    """The demo's first build imports rankkit from the checkout (PYTHONPATH, from another folder
    here) before the editable install exists; the installed rankkit's runs must find it: the same
    package folder, the same fingerprint."""
    env = _env()
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", "from rankkit.compiler import aot; print(aot._PACKAGE); "
                           "print(aot.fingerprint())"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    package, fp = proc.stdout.split()
    assert os.path.realpath(package) == os.path.realpath(aot._PACKAGE)
    assert fp == aot.fingerprint()


def _make(*args: str, cwd=ROOT, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, env=env, capture_output=True, text=True)


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")


@needs_make
def test_the_kernel_deps_are_pyprojects_numpy_and_numba(tmp_path):
    """KERNEL_DEPS (installed before the first build) are pyproject.toml's numpy and numba
    requirements as written, and nothing else."""
    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    wanted = [d for d in re.findall(r'"([^"]+)"', deps) if re.match(r"(numpy|numba)\b", d)]
    assert len(wanted) == 2, wanted
    proc = _make("-s", "--eval", "print-kernel-deps: ; @echo '$(KERNEL_DEPS)'", "print-kernel-deps")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == wanted
    # and the recipe quotes them for the shell (numpy>=1.24 unquoted: numpy, output to a file "=1.24")
    proc = _make("-n", f"VENV={tmp_path}", f"{tmp_path}/.kernel-deps-installed")
    assert proc.returncode == 0, proc.stderr
    install = [line for line in proc.stdout.splitlines() if "--no-compile" in line and "numba" in line]
    assert install and all(f"'{d}'" in install[0] for d in wanted), proc.stdout


def _venv_ok(venv) -> None:
    py = os.path.join(venv, "bin", "python")
    proc = subprocess.run([py, "-c", "import pip, sys; print(pip.__version__); print(sys.prefix)"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    version, prefix = proc.stdout.split()
    assert tuple(int(v) for v in version.split(".")[:2]) >= (21, 3)
    assert os.path.realpath(prefix) == os.path.realpath(venv)


@needs_make
@pytest.mark.slow
@pytest.mark.parametrize("bundled", [True, False])
def test_the_venv_with_and_without_ensurepips_wheels(tmp_path, bundled):
    """The venv's pip from ensurepip's bundled wheels (no byte-compiling of pip), and, on a Python
    that has none (BUNDLED=false stands for one), `python -m venv` as before; pip >= 21.3 either
    way (PEP 660 editable installs). (setuptools too where the Python bundles it: numba.pycc needs it.)"""
    venv = str(tmp_path / "venv")
    args = [f"VENV={venv}", f"PYTHON={sys.executable}", f"{venv}/.pip"] + ([] if bundled else ["BUNDLED=false"])
    proc = _make(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("--without-pip" in proc.stdout) == bundled, proc.stdout
    _venv_ok(venv)
    if bundled:
        import ensurepip

        wheels = os.listdir(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"))
        if any(w.startswith("setuptools-") for w in wheels):
            py = os.path.join(venv, "bin", "python")
            assert subprocess.run([py, "-c", "import setuptools"], capture_output=True).returncode == 0
