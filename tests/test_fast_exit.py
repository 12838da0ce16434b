"""The rankkit command's end (rankkit/__main__.py, _exit_now): once the status is decided it ends
with os._exit, after flushing stdout and stderr and running the atexit functions, but only when
nothing else could still be working; otherwise through Python's own shutdown, as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_cli import ROOT, _env


def _py(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=60)


def test_flushes_and_runs_atexit_then_exits_with_the_status():
    p = _py("import atexit, sys\n"
            "from rankkit.__main__ import _exit_now\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "sys.stdout.write('buffered '); sys.stderr.write('err ')\n"
            "_exit_now(3)\n"
            "print('not reached')")
    assert p.returncode == 3
    assert p.stdout == "buffered atexit ran\n" and p.stderr == "err "


def test_statuses_as_python_gives_them():
    assert _py("from rankkit.__main__ import _exit_now; _exit_now(256 + 7)").returncode == 7
    p = _py("from rankkit.__main__ import _exit_now; _exit_now('rankkit: a message')")
    assert p.returncode == 1 and p.stderr == "rankkit: a message\n"


def test_waits_for_a_thread_that_may_still_be_writing(tmp_path):
    """A live non-daemon thread that is not one of the kernel pool's: Python's shutdown waits for it,
    so what it writes is complete (os._exit would have cut it off)."""
    out = tmp_path / "late.txt"
    p = _py("import threading, time\n"
            "from rankkit.__main__ import _exit_now\n"
            f"def late():\n    time.sleep(0.3)\n    open({str(out)!r}, 'w').write('done')\n"
            "threading.Thread(target=late, name='rankkit-fold_0').start()\n"
            "_exit_now(0)")
    assert p.returncode == 0 and out.read_text() == "done"


def test_a_kernel_still_running_on_the_pool_is_waited_for(tmp_path):
    """After an error the calling thread stops waiting for the pool's other parts: their kernel (a
    JIT compile writing numba's cache, say) finishes before the process ends."""
    out = tmp_path / "kernel.txt"
    p = _py("import time\n"
            "from rankkit import threads\n"
            "from rankkit.__main__ import _exit_now\n"
            "threads.apply(2)\n"
            f"def part(lo, hi):\n    if lo:\n        time.sleep(0.3)\n        open({str(out)!r}, 'w').write('done')\n"
            "    else:\n        raise RuntimeError('first part fails')\n"
            "try:\n    threads.run(part, [(0, 1), (1, 2)])\nexcept RuntimeError:\n    pass\n"
            "_exit_now(2)")
    assert p.returncode == 2 and out.read_text() == "done", p.stderr


def test_idle_kernel_pool_threads_do_not_hold_it_up():
    p = _py("import numpy as np\n"
            "from rankkit import threads\n"
            "from rankkit.__main__ import _exit_now\n"
            "threads.apply(2)\n"
            "threads._pool = None\n"
            "import concurrent.futures as cf\n"
            "threads._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix='rankkit')\n"
            "threads._pool.submit(lambda: None).result()\n"
            "import threading\n"
            "assert any(t.name.startswith('rankkit_') for t in threading.enumerate())\n"
            "_exit_now(5)")
    assert p.returncode == 5, p.stderr


def test_the_command_ends_through_it(tmp_path):
    """`python -m rankkit` (what the `rankkit` script runs): an error's status and line, and a run's
    complete output, as before."""
    p = subprocess.run([sys.executable, "-m", "rankkit", "predict", str(tmp_path / "missing.txt"), "M"], cwd=tmp_path,
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no such" in p.stderr
    p = subprocess.run([sys.executable, "-m", "rankkit", "--version"], env=_env(), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("rankkit ")


def _probe(tmp_path):
    """An environment whose Python, when its own shutdown runs (threading's exit hooks: not run by
    os._exit), writes tmp_path/shutdown."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import threading\n"
        f"threading._register_atexit(lambda: open({str(tmp_path / 'shutdown')!r}, 'w').close())\n")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(site)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def test_the_command_itself_skips_pythons_shutdown(tmp_path):
    env = _probe(tmp_path)
    commands = [[sys.executable, "-m", "rankkit", "--version"]]
    script = Path(sys.executable).parent / "rankkit"
    if script.exists():  # the console script of the environment rankkit is installed in
        commands.append([str(script), "--version"])
    for cmd in commands:
        p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and p.stdout.startswith("rankkit "), (cmd, p.stderr)
        assert not (tmp_path / "shutdown").exists(), cmd


def test_a_program_running_rankkit_gets_control_back(tmp_path):
    """Under a profiler, or in a host that runs the module and catches SystemExit, rankkit ends with
    SystemExit: the profile is written, the host goes on, Python's shutdown runs."""
    env = _probe(tmp_path)
    prof = tmp_path / "prof.out"
    p = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "rankkit", "--version"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and prof.stat().st_size > 0 and (tmp_path / "shutdown").exists(), p.stderr
    (tmp_path / "shutdown").unlink()
    p = subprocess.run([sys.executable, "-c",
                        "import runpy, sys\n"
                        "sys.argv = ['rankkit', 'predict', 'missing.txt', 'M']\n"
                        "try:\n    runpy.run_module('rankkit', run_name='__main__', alter_sys=True)\n"
                        "except SystemExit as e:\n    print('host got', e.code)\n"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "host got 2\n" and (tmp_path / "shutdown").exists(), p.stderr
