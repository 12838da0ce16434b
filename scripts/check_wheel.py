"""Build rankkit's sdist and wheel, install the wheel alone into a fresh virtual environment outside
the checkout, and run what a pip user runs first, from the installed package only.

    python scripts/check_wheel.py [--keep DIR]

Checks, each a failure with one line saying what was found (exit 1):

- `python -m build` makes an sdist and a wheel (the wheel built from the sdist, so the sdist is
  complete enough to build from);
- the wheel holds the package's modules, py.typed and the license, and nothing else (no tests, no
  data, no caches or compiled kernels);
- in a new environment with only the wheel (and its dependencies from the index), in a directory
  with no source tree and PYTHONPATH unset: `import rankkit` comes from the environment;
  `rankkit --version`; the first command, on a fresh kernel cache, compiles on first use and says
  so once: `rankkit predict` of a model an earlier rankkit wrote (tests/fixtures/models), whose
  scores must be the ones pinned beside it; meanwhile `rankkit warmup` builds the kernels ahead of
  time (into another fresh kernel cache) and `python -m rankkit.warmup` then finds them built; the
  demo's train, predict and eval after that compile nothing; the fixture's scores are the same
  again; the installed wheel's model and scores are the checkout's own `rankkit train` and
  `rankkit predict` on the same files.

Train's kernels compiled by the JIT (the first train of a user who skips `rankkit warmup`) are not
run from the wheel: their bits are the build's (tests/test_aot.py, on the checkout), the build
is made here from the installed package, and a first command's compile from the installed package
is the predict above (its kernels are the fewest and cheapest of any command on a data file).

Then, the checks passed, the build `rankkit warmup` made is handed to `make test` (.ci/run runs
it next): copied into the test suite's kernel cache for this checkout (rankkit.compiler.aot.
suite_cache_dir) if it was made for exactly the checkout's fingerprint (every source file's text,
Python, numpy, numba, llvmlite, the NUMBA_* settings, the CPU) and that cache has no build yet, so
the same kernels are not compiled twice in one CI run; otherwise nothing is copied and make test
builds its own, as before. --no-share leaves the suite's cache alone.

`make wheel-check` runs it; .ci/run runs it before the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPILING = "compiling kernels"
# the first command after installing predicts with a model an earlier rankkit wrote, whose scores are
# pinned beside it (tests/test_model_compat.py)
FIRST_MODEL = ROOT / "tests" / "fixtures" / "models" / "format2-dense.model"


class Failed(Exception):
    pass


def run(cmd, *, cwd, env, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=1800)
    if check and proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise Failed(f"`{' '.join(map(str, cmd))}` exited {proc.returncode}: " + " | ".join(tail))
    return proc


def build(out: Path) -> tuple[Path, Path]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    run([sys.executable, "-m", "build", "--outdir", out, ROOT], cwd=out, env=env)
    wheels, sdists = sorted(out.glob("rankkit-*.whl")), sorted(out.glob("rankkit-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise Failed(f"python -m build made {[p.name for p in out.iterdir()]}, not one sdist and one wheel")
    return wheels[0], sdists[0]


def check_contents(wheel: Path) -> int:
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = next((n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")), None)
    if dist_info is None:
        raise Failed(f"{wheel.name} has no .dist-info")
    allowed_meta = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "top_level.txt", "licenses/LICENSE"}
    stray = []
    for n in names:
        top, _, rest = n.partition("/")
        if top == dist_info:
            if rest not in allowed_meta:
                stray.append(n)
        elif top == "rankkit":
            if not (n.endswith(".py") or n == "rankkit/py.typed") or "/__pycache__/" in n or "/." in n:
                stray.append(n)
        else:
            stray.append(n)
    if stray:
        raise Failed(f"{wheel.name} holds files that are not the package, py.typed or the license: {stray[:10]}")
    for need in ("rankkit/__init__.py", "rankkit/py.typed", f"{dist_info}/licenses/LICENSE", f"{dist_info}/entry_points.txt"):
        if need not in names:
            raise Failed(f"{wheel.name} lacks {need}")
    license_text = zipfile.ZipFile(wheel).read(f"{dist_info}/licenses/LICENSE").decode()
    if "BSD 3-Clause" not in license_text or "rankkit" not in license_text:
        raise Failed("the wheel's LICENSE is not rankkit's BSD-3-Clause text")
    return len(names)


def check_installed(wheel: Path, work: Path) -> list[str]:
    facts = []
    env_dir, run_dir, cache, first_cache = work / "env", work / "run", work / "kernel-cache", work / "first-cache"
    run_dir.mkdir()
    cache.mkdir()
    first_cache.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "NUMBA_", "RANKKIT_", "VIRTUAL_ENV"))}
    run([sys.executable, "-m", "venv", env_dir], cwd=work, env=base)
    py, rk = env_dir / "bin" / "python", env_dir / "bin" / "rankkit"
    t = time.perf_counter()
    run([py, "-m", "pip", "install", "--quiet", wheel], cwd=work, env=dict(base, PYTHONWARNINGS="ignore"))
    facts.append(f"pip install of the wheel into a new environment: {time.perf_counter() - t:.1f} s")
    env = dict(base, NUMBA_CACHE_DIR=str(cache), PATH=f"{env_dir / 'bin'}{os.pathsep}{base.get('PATH', '')}")
    for name in ("sample.train.txt", "sample.test.txt"):
        shutil.copyfile(ROOT / "data" / name, run_dir / name)
    shutil.copyfile(FIRST_MODEL, run_dir / "first.model")

    where = run([py, "-c", "import rankkit, sys; print(rankkit.__file__)"], cwd=run_dir, env=env).stdout.strip()
    if not Path(where).resolve().is_relative_to(env_dir.resolve()):
        raise Failed(f"import rankkit in the new environment came from {where}, not from the installed wheel")
    version = run([rk, "--version"], cwd=run_dir, env=env).stdout
    if "model files: reads rankkit-model format" not in version:
        raise Failed(f"rankkit --version said {version!r}")

    # the first run after pip install: it compiles, and says so once. On a kernel cache of its own,
    # while `rankkit warmup` builds into the other, empty one: each proves what it would prove alone
    # (a command compiles on first use, on a fresh cache; the build is made from the installed package
    # alone). The first command is predict, whose kernels (the reader's and the product's) are the
    # fewest and cheapest of any command on a data file (about 10 s of one core against train's 23 s
    # and train, predict and eval's 45 s): its scores are pinned by the fixture beside the model
    # (tests/test_model_compat.py), and train's kernels are proved by the build and the train after it
    # (their JIT and AOT bits are held equal by tests/test_aot.py on the checkout)
    first_env = dict(env, NUMBA_CACHE_DIR=str(first_cache))
    first: dict = {}

    def first_use() -> None:
        try:
            t0 = time.perf_counter()
            first["predict"] = run([rk, "predict", "sample.test.txt", "first.model", "first.scores"], cwd=run_dir, env=first_env)
            first["seconds"] = time.perf_counter() - t0
        except BaseException as exc:  # raised in the main thread after the join
            first["error"] = exc

    worker = threading.Thread(target=first_use)
    t = time.perf_counter()
    worker.start()
    try:
        warm = run([rk, "warmup"], cwd=run_dir, env=env)
        warm_seconds = time.perf_counter() - t
    finally:
        worker.join()
    both = time.perf_counter() - t
    if "error" in first:
        raise first["error"]
    if first["predict"].stderr.count(COMPILING) != 1:
        raise Failed(f"the first command after installing should say once that it compiles; stderr was {first['predict'].stderr!r}")
    if (run_dir / "first.scores").read_bytes() != FIRST_MODEL.with_suffix(".scores").read_bytes():
        raise Failed(f"the first predict's scores of {FIRST_MODEL.name} differ from {FIRST_MODEL.with_suffix('.scores').name}")
    facts.append(f"first predict (compiling on first use, beside the build): {first['seconds']:.1f} s")
    facts.append(f"rankkit warmup: {warm_seconds:.1f} s ({warm.stderr.strip().splitlines()[-1]}); "
                 f"with the first predict beside it: {both:.1f} s")
    again = run([py, "-m", "rankkit.warmup"], cwd=run_dir, env=env)
    if "already compiled" not in again.stderr:
        raise Failed(f"python -m rankkit.warmup after rankkit warmup should find the build; it said {again.stderr!r}")

    t = time.perf_counter()
    warmed = run([rk, "train", "sample.train.txt", "m.model", "-C", "0.01"], cwd=run_dir, env=env)
    if COMPILING in warmed.stderr:
        raise Failed(f"a train after rankkit warmup compiled: {warmed.stderr!r}")
    facts.append(f"train after warmup: {time.perf_counter() - t:.2f} s")
    for args in (["predict", "sample.test.txt", "m.model", "m.scores"], ["predict", "sample.test.txt", "first.model", "f.scores"]):
        if COMPILING in run([rk, *args], cwd=run_dir, env=env).stderr:
            raise Failed(f"rankkit {' '.join(args)} after rankkit warmup compiled")
    ev = run([rk, "eval", "sample.test.txt", "m.scores"], cwd=run_dir, env=env)
    if "ndcg" not in ev.stdout.lower() or COMPILING in ev.stderr:
        raise Failed(f"rankkit eval after rankkit warmup printed {ev.stdout!r} and {ev.stderr!r}")
    if (run_dir / "f.scores").read_bytes() != (run_dir / "first.scores").read_bytes():
        raise Failed("the fixture model's scores after rankkit warmup differ from the first predict's")

    # the same numbers as the checkout's own rankkit: its train and predict on the same files. On the
    # wheel's build, which is valid for the checkout only if every source file's text is the same
    # (its fingerprint); otherwise they compile into that cache first (a checkout's JIT run, ~25 s)
    checkout_env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    run([sys.executable, "-m", "rankkit", "train", run_dir / "sample.train.txt", run_dir / "c.model", "-C", "0.01"],
        cwd=ROOT, env=checkout_env)
    checkout = run([sys.executable, "-m", "rankkit", "predict", run_dir / "sample.test.txt", run_dir / "m.model", "-"],
                   cwd=ROOT, env=checkout_env)
    if (run_dir / "m.scores").read_text() != checkout.stdout:
        raise Failed("m.scores from the installed wheel differs from the checkout's rankkit predict")

    def numbers(path: Path) -> list[str]:  # a model less its time stamp, timings, checksum and file names
        return [ln for ln in path.read_text().splitlines()
                if ln.split(" ", 1)[0] not in ("created", "checksum", "train_file")
                and not ln.split(" ", 1)[0].endswith("_seconds")]

    a, b = numbers(run_dir / "m.model"), numbers(run_dir / "c.model")
    if a != b:
        diff = [f"{x!r} / {y!r}" for x, y in zip(a, b) if x != y][:3]
        raise Failed(f"the installed wheel's model and the checkout's differ (beyond timings): {diff}")
    return facts


def share_build(cache: Path) -> str:
    """Copy the build in `cache` (the installed wheel's kernel cache) into the checkout's test-suite
    kernel cache when it is valid there (the same fingerprint) and that has none; says what it did.
    The modules first, each under a temporary name then renamed, the manifest last: a run started
    meanwhile sees no build or the whole one."""
    sys.path.insert(0, str(ROOT))  # the checkout's rankkit (make wheel-check runs the checkout's .venv)
    from rankkit.compiler import aot

    src = cache / aot.SUBDIR
    m = aot.read_manifest(str(src))
    if m is None:
        return "no build to hand to make test"
    if m.get("fingerprint") != aot.fingerprint():
        return ("its build was not made for the checkout's fingerprint (other sources, versions or NUMBA_* settings): "
                "not handed to make test")
    dest = Path(aot.suite_cache_dir()) / aot.SUBDIR
    have = aot.read_manifest(str(dest))
    if have is not None and have.get("fingerprint") == m["fingerprint"]:
        return f"make test's kernel cache {dest.parent} already holds a build for these sources"
    dest.mkdir(exist_ok=True)
    for name in [*m["modules"], aot.MANIFEST]:  # the manifest last
        fd, tmp = tempfile.mkstemp(prefix=".share-", dir=dest)
        os.close(fd)
        try:
            shutil.copyfile(src / name, tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, dest / name)
        except BaseException:
            os.unlink(tmp)
            raise
    n = len(m["modules"])
    return f"its build ({n} module{'s' if n != 1 else ''}) handed to make test's kernel cache {dest.parent}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary directory, removed)")
    ap.add_argument("--no-share", action="store_true", help="do not hand the wheel's kernel build to make test's cache")
    a = ap.parse_args(argv)
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="rankkit-wheel-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        dist = work / "dist"
        dist.mkdir()
        wheel, sdist = build(dist)
        n = check_contents(wheel)
        print(f"wheel-check: {wheel.name} ({n} files, {wheel.stat().st_size // 1024} KB) and {sdist.name} built")
        for fact in check_installed(wheel, work):
            print(f"wheel-check: {fact}")
        print("wheel-check: the installed wheel passed the demo (train, predict, eval, warmup) outside the checkout")
        if not a.no_share:
            print(f"wheel-check: {share_build(work / 'kernel-cache')}")
        return 0
    except Failed as exc:
        print(f"wheel-check: FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
