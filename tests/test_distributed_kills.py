"""`--dask` against a real cluster whose processes are killed at chosen points (issue 23).

Every process is a separate `dask scheduler` / `dask worker` / `python -m rankkit` started by the
test on 127.0.0.1 with free ports (--port 0, no dashboard), each in its own process group, and
killed by the fixture's teardown whatever the outcome. The kill points are made deterministic by
freezing the rankkit client (SIGSTOP) once the workers hold the parts, killing, and letting it
go on (SIGCONT): the client is then in the middle of a fit, whatever the machine's load.

Each case ends with the model of an undisturbed run (bit for bit), or with exit 2 and one line on
stderr, the previous model left as it was, and no process of rankkit's left. The time bounds are
RANKKIT_DASK_TIMEOUT (short here) plus a margin that only guards against a hang: no timed claim.

Two cheap cases run in `make test`; the others are marked slow (`make test-all`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")  # the test extra installs it: a skip only outside `make test`

from rankkit.distributed import fit_newton  # noqa: E402
from rankkit.parts import worker as W  # noqa: E402
from rankkit.io.model import read_model  # noqa: E402
from tests.test_cli import MODEL, _env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.train.txt"
FIT = ("-C", "1", "--tol", "1e-12")  # 7 Newton iterations, ~50 rounds on the sample: long enough to kill in
OLD_MODEL = MODEL.encode()  # the previous model: a failed run never replaces it
HANG = 120  # seconds: a run still going after this is a hang (the bounds below are a few seconds)


def _split(data: bytes, n_parts: int) -> list[bytes]:
    lines = data.splitlines(True)
    qids = [re.search(rb"qid:(\d+)", ln).group(1) for ln in lines]
    starts = [0] + [i for i in range(1, len(lines)) if qids[i] != qids[i - 1]]
    cuts = [starts[len(starts) * k // n_parts] for k in range(n_parts)] + [len(lines)]
    return [b"".join(lines[cuts[k]:cuts[k + 1]]) for k in range(n_parts)]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    d = tmp_path_factory.mktemp("kill-parts")
    paths = []
    for k, chunk in enumerate(_split(SAMPLE.read_bytes(), 4)):
        (d / f"part-{k}.txt").write_bytes(chunk)
        paths.append(str(d / f"part-{k}.txt"))
    return paths


@pytest.fixture(scope="module")
def reference(parts):
    """The weights of an undisturbed fit: `rankkit train PARTS` in one process (no cluster), the same
    bytes as an in-process cluster's (and any cluster's: tests/test_distributed_bytes.py), so a
    disturbed run that ends with them has the model of one process."""
    one = fit_newton(parts, None, C=1.0, tol=1e-12)[0].w.tobytes()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                                  silence_logs=50) as lc, distributed.Client(lc) as c:
        assert fit_newton(parts, c, C=1.0, tol=1e-12)[0].w.tobytes() == one
    return one


class DaskProcesses:
    """A scheduler and workers as processes of their own (each its own process group)."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.env = _env()
        self.env["NUMBA_NUM_THREADS"] = "1"  # the machine's cores are few and shared
        self.procs: list[subprocess.Popen] = []
        self.address = None
        self.scheduler_proc = None
        self._client = None

    def _popen(self, cmd, **kw):
        p = subprocess.Popen(cmd, env=kw.pop("env", self.env), stdin=subprocess.DEVNULL, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def scheduler(self) -> str:
        sfile = self.tmp / f"scheduler-{time.monotonic_ns()}.json"
        self.scheduler_proc = self._popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                           "--no-dashboard", "--scheduler-file", str(sfile)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(ValueError, OSError, KeyError):
                self.address = json.loads(sfile.read_text())["address"]
                return self.address
            assert time.monotonic() < deadline, "the dask scheduler did not start within 60 s"
            assert self.scheduler_proc.poll() is None, "the dask scheduler exited"
            time.sleep(0.1)

    def worker(self, nanny: bool = False) -> subprocess.Popen:
        return self._popen([sys.executable, "-m", "dask", "worker", self.address, "--nthreads", "1", "--host", "127.0.0.1",
                            "--no-dashboard", "--nanny" if nanny else "--no-nanny"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @property
    def client(self):
        """A client of the test's own (to look at the workers), never the one under test."""
        if self._client is None:
            self._client = distributed.Client(self.address, timeout=30, set_as_default=False)
        return self._client

    def wait_workers(self, n: int) -> None:
        self.client.wait_for_workers(n, timeout=90)

    def held(self) -> int:
        """Parts held by the workers (of the fit under way)."""
        return sum(self.client.run(W.held_parts).values())

    def worker_pids(self) -> list[int]:
        return sorted(self.client.run(os.getpid).values())

    def close_client(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close(timeout=5)
            self._client = None

    def rankkit(self, *args, cwd, extra_env=None) -> "Run":
        env = dict(self.env)
        env.update(extra_env or {})
        out, err = open(cwd / "run.out", "wb"), open(cwd / "run.err", "wb")
        p = self._popen([sys.executable, "-m", "rankkit", *map(str, args)], cwd=cwd, env=env, stdout=out, stderr=err)
        out.close(), err.close()
        return Run(p, cwd / "run.out", cwd / "run.err")

    def stop(self) -> None:
        self.close_client()
        for p in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGCONT)
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=30)


class Run:
    """A `python -m rankkit` process (its own process group) with its output in files."""

    def __init__(self, proc, out, err):
        self.proc, self.out, self.err = proc, out, err

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        assert self.proc.poll() is None, "the run ended before the kill point"

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def wait(self, timeout=HANG) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"rankkit still running after {timeout} s (a hang): {self.stderr()}") from None

    def stderr(self) -> str:
        return self.err.read_bytes().decode("utf-8", "replace")

    def wait_for_line(self, fragment: str, timeout=HANG) -> None:
        deadline = time.monotonic() + timeout
        while fragment not in self.stderr():
            assert self.proc.poll() is None, f"rankkit ended before printing {fragment!r}: {self.stderr()}"
            assert time.monotonic() < deadline, f"no {fragment!r} after {timeout} s: {self.stderr()}"
            time.sleep(0.05)

    def no_process_left(self) -> None:
        """Nothing of the run's process group is alive (a LocalCluster's workers included)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return
            assert time.monotonic() < deadline, "a process of the rankkit run is still alive"
            time.sleep(0.1)


@pytest.fixture
def dask_procs(tmp_path):
    procs = DaskProcesses(tmp_path)
    yield procs  # the teardown below runs whatever the test's outcome
    procs.stop()


def _train(dp: DaskProcesses, parts, cwd: Path, *extra, timeout: float = 3, verbose: bool = False) -> Run:
    (cwd / "m.model").write_bytes(OLD_MODEL)
    return dp.rankkit("train", *parts, "m.model", *FIT, "--dask", dp.address, *(["-v"] if verbose else []), *extra,
                      cwd=cwd, extra_env={"RANKKIT_DASK_TIMEOUT": f"{timeout:g}"})


def _wait_held(dp: DaskProcesses, run: Run, n: int) -> None:
    deadline = time.monotonic() + HANG
    while dp.held() < n:
        assert run.proc.poll() is None, f"rankkit ended before the workers held {n} parts: {run.stderr()}"
        assert time.monotonic() < deadline, "the workers never held the parts"
        time.sleep(0.02)


def _one_line_failure(run: Run, cwd: Path, *fragments) -> str:
    err = run.stderr()
    assert run.proc.returncode == 2, (run.proc.returncode, err)
    assert err.count("\n") == 1 and err.startswith("rankkit: error: "), err
    for f in fragments:
        assert f in err, (f, err)
    assert (cwd / "m.model").read_bytes() == OLD_MODEL  # the previous model intact
    assert not [p.name for p in cwd.iterdir() if p.name.startswith(("m.model.", ".m.model"))]  # no temp file left
    run.no_process_left()
    return err


def _same_model(run: Run, cwd: Path, reference: bytes) -> str:
    err = run.stderr()
    assert run.proc.returncode == 0, err
    assert "Traceback" not in err, err
    # with -v, Dask's own records are routed there, one line each, marked as Dask's
    assert all(not ln.startswith(("  ", "distributed.", "20")) for ln in err.splitlines()), err
    assert read_model(str(cwd / "m.model")).weights.tobytes() == reference
    run.no_process_left()
    return err


# -- make test: two cheap cases ------------------------------------------------------------------
def test_scheduler_without_worker_is_one_line_after_the_timeout(dask_procs, parts, tmp_path):
    """No worker at all: exit 2 after RANKKIT_DASK_TIMEOUT seconds, one line, the old model kept."""
    dask_procs.scheduler()
    t0 = time.monotonic()
    run = _train(dask_procs, parts, tmp_path, timeout=3)
    run.wait()
    assert time.monotonic() - t0 < HANG
    _one_line_failure(run, tmp_path, f"--dask {dask_procs.address}: the scheduler has no worker (waited 3 s")


def test_last_worker_killed_mid_fit_and_none_joins(dask_procs, parts, tmp_path):
    """The only worker killed in the middle of a fit: one line, exit 2, after RANKKIT_DASK_TIMEOUT."""
    dask_procs.scheduler()
    w = dask_procs.worker()
    dask_procs.wait_workers(1)
    run = _train(dask_procs, parts, tmp_path, timeout=3)
    _wait_held(dask_procs, run, len(parts))
    run.pause()
    os.killpg(w.pid, signal.SIGKILL)
    w.wait(timeout=30)
    run.resume()
    run.wait()
    _one_line_failure(run, tmp_path, "the Dask cluster has had no worker for 3 s (RANKKIT_DASK_TIMEOUT); no output written")


# -- make test-all ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_last_worker_killed_and_a_new_one_joins(dask_procs, parts, tmp_path, reference):
    """The only worker killed mid-fit, another started: the fit goes on there, to the same model."""
    dask_procs.scheduler()
    w = dask_procs.worker()
    dask_procs.wait_workers(1)
    run = _train(dask_procs, parts, tmp_path, timeout=60, verbose=True)
    run.wait_for_line("iter   1 ")
    run.pause()
    os.killpg(w.pid, signal.SIGKILL)
    w.wait(timeout=30)
    run.resume()
    run.wait_for_line("has no worker left: waiting up to 60 s for one to join")
    dask_procs.worker()
    run.wait()
    err = _same_model(run, tmp_path, reference)
    assert "read again" in err, err


@pytest.mark.parametrize("when", ["mid-fit", "while reading"])
@pytest.mark.slow
def test_all_workers_killed_their_nannies_restart_them(dask_procs, parts, tmp_path, reference, when):
    """Both worker processes killed (their nannies start new ones at new addresses): the same model."""
    dask_procs.scheduler()
    for _ in range(2):
        dask_procs.worker(nanny=True)
    dask_procs.wait_workers(2)
    pids = dask_procs.worker_pids()
    run = _train(dask_procs, parts, tmp_path, timeout=60, verbose=True)
    if when == "mid-fit":
        run.wait_for_line("iter   1 ")
    else:
        _wait_held(dask_procs, run, 1)
    run.pause()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    run.resume()
    run.wait()
    _same_model(run, tmp_path, reference)


@pytest.mark.slow
def test_all_workers_killed_without_nannies(dask_procs, parts, tmp_path):
    dask_procs.scheduler()
    ws = [dask_procs.worker() for _ in range(2)]
    dask_procs.wait_workers(2)
    run = _train(dask_procs, parts, tmp_path, timeout=5)
    _wait_held(dask_procs, run, len(parts))
    run.pause()
    for w in ws:
        os.killpg(w.pid, signal.SIGKILL)
        w.wait(timeout=30)
    run.resume()
    run.wait()
    _one_line_failure(run, tmp_path, "the Dask cluster has had no worker for 5 s")


@pytest.mark.slow
def test_scheduler_killed_mid_fit(dask_procs, parts, tmp_path):
    """The scheduler killed mid-fit: one line (none of Dask's tracebacks), exit 2, old model kept."""
    dask_procs.scheduler()
    dask_procs.worker()
    dask_procs.wait_workers(1)
    run = _train(dask_procs, parts, tmp_path, timeout=5)
    _wait_held(dask_procs, run, len(parts))
    dask_procs.close_client()
    run.pause()
    os.killpg(dask_procs.scheduler_proc.pid, signal.SIGKILL)
    dask_procs.scheduler_proc.wait(timeout=30)
    run.resume()
    run.wait()
    _one_line_failure(run, tmp_path, "lost the Dask scheduler (no answer for 5 s, RANKKIT_DASK_TIMEOUT); no output written")


@pytest.mark.slow
def test_worker_that_joins_late_is_used(dask_procs, parts, tmp_path, reference):
    """A scheduler without workers: rankkit says it waits (one line), and trains once one joins."""
    dask_procs.scheduler()
    run = _train(dask_procs, parts, tmp_path, timeout=90, verbose=True)
    run.wait_for_line("has no worker yet: waiting up to 90 s for one")
    dask_procs.worker()
    run.wait()
    _same_model(run, tmp_path, reference)


@pytest.mark.slow
def test_local_cluster_is_quiet_and_leaves_no_process(parts, tmp_path, reference):
    """--dask local:2 with port 8787 taken: nothing on stderr, the same model, no process left."""
    held = socket.socket()
    with contextlib.suppress(OSError):  # taken already (another dashboard) is the case itself
        held.bind(("127.0.0.1", 8787))
        held.listen()
    try:
        procs = DaskProcesses(tmp_path)
        try:
            run = procs.rankkit("train", *parts, "m.model", *FIT, "--dask", "local:2", cwd=tmp_path)
            run.wait()
        finally:
            procs.stop()
    finally:
        held.close()
    assert run.stderr() == ""
    _same_model(run, tmp_path, reference)
    assert read_model(str(tmp_path / "m.model")).header["workers"] == "2"
    assert np.frombuffer(reference).shape[0] > 0
