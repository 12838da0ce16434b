"""A Dask scheduler that is alive but does not answer (SIGSTOP), before or during a fit (issue 40):
every request to it is bounded by RANKKIT_DASK_TIMEOUT. The command line ends with one line and
exit 2; Python raises one ClusterError, and nothing else reaches stderr (no "Couldn't gather keys",
no asyncio traceback). Hand-started `dask scheduler` / `dask worker` processes on 127.0.0.1 (the
helpers of tests/test_distributed_kills.py), every one stopped by the fixture's teardown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

distributed = pytest.importorskip("distributed")  # the test extra installs it: a skip only outside `make test`

from tests.test_distributed_kills import HANG, _one_line_failure, _train, _wait_held, dask_procs, parts  # noqa: E402,F401

TIMEOUT = 3  # RANKKIT_DASK_TIMEOUT of the runs under test
MARGIN = 25  # seconds past it that only guard against a hang (a loaded machine starts Python slowly)


def _stop(dp) -> None:
    dp.close_client()  # the test's own client would wait on the stopped scheduler too
    os.killpg(dp.scheduler_proc.pid, signal.SIGSTOP)


def test_cli_scheduler_stopped_during_a_fit(dask_procs, parts, tmp_path):
    """The scheduler stopped once the worker holds the parts: one line, exit 2, the old model kept,
    within the timeout (the fit's watch used to wait in Client.scheduler_info forever)."""
    dask_procs.scheduler()
    dask_procs.worker()
    dask_procs.wait_workers(1)
    run = _train(dask_procs, parts, tmp_path, timeout=TIMEOUT)
    _wait_held(dask_procs, run, len(parts))
    t0 = time.monotonic()
    _stop(dask_procs)
    run.wait()
    took = time.monotonic() - t0
    _one_line_failure(run, tmp_path, "lost the Dask scheduler (no answer for 3 s, RANKKIT_DASK_TIMEOUT)")
    assert took < TIMEOUT + MARGIN, took


def test_cli_scheduler_stopped_before_the_fit(dask_procs, parts, tmp_path):
    dask_procs.scheduler()
    dask_procs.worker()
    dask_procs.wait_workers(1)
    _stop(dask_procs)
    t0 = time.monotonic()
    run = _train(dask_procs, parts, tmp_path, timeout=TIMEOUT)
    run.wait()
    assert time.monotonic() - t0 < TIMEOUT + MARGIN
    _one_line_failure(run, tmp_path, f"--dask {dask_procs.address}: cannot reach a Dask scheduler there (no answer within 3 s")


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import dask.array as da
    from distributed import Client
    import rankkit
    from rankkit.dask import DaskRankSVM

    X, y, qid = rankkit.load_svmlight_file(sys.argv[2], query_id=True)
    X = da.from_array(X.toarray(), chunks=(500, -1))
    y, qid = da.from_array(y, chunks=500), da.from_array(qid, chunks=500)
    client = Client(sys.argv[1], timeout=30)
    ranker = DaskRankSVM(C=1.0, tol=1e-12, client=client)
    if sys.argv[3] == "before":
        print("connected", flush=True)
        sys.stdin.readline()  # the test stops the scheduler, then lets the fit begin
    else:
        ranker.fit(X, y, qid=qid)  # compiles the workers' kernels
        print("fitted", flush=True)
        sys.stdin.readline()
        # the second fit says when it is under way (its first Hessian-vector product is done) and
        # waits there, so that the test stops the scheduler mid-fit however fast the machine is
        from rankkit.parts.newton import Problem
        hv, said = Problem.hv, []

        def hv_then_wait(self, *args):
            out = hv(self, *args)
            if not said:
                said.append(1)
                print("under way", flush=True)
                import time
                time.sleep(3)
            return out
        Problem.hv = hv_then_wait
    try:
        ranker.fit(X, y, qid=qid)
    except rankkit.ClusterError as exc:
        print(f"ClusterError: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
""")


@pytest.mark.parametrize("when", [pytest.param("before", marks=pytest.mark.slow), "during",
                                  pytest.param("worker-killed", marks=pytest.mark.slow)])
def test_python_scheduler_stopped_is_one_cluster_error_and_nothing_else(dask_procs, tmp_path, when):
    """DaskRankSVM.fit with the scheduler stopped before it begins, or in the middle of it, or its
    only worker killed in the middle of it: one ClusterError within the timeout, and stderr holds
    only what the program printed of it (no "Couldn't gather keys", no asyncio traceback)."""
    from tests.test_distributed_kills import SAMPLE

    dask_procs.scheduler()
    worker = dask_procs.worker()
    dask_procs.wait_workers(1)
    env = dict(dask_procs.env, RANKKIT_DASK_TIMEOUT=str(TIMEOUT))
    (tmp_path / "fit.py").write_text(SCRIPT)
    p = subprocess.Popen([sys.executable, str(tmp_path / "fit.py"), dask_procs.address, str(SAMPLE), when],
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        first = p.stdout.readline().decode()
        assert first.strip() in ("connected", "fitted"), (first, p.stderr.read().decode())
        if when != "before":
            p.stdin.write(b"\n")
            p.stdin.flush()
            second = p.stdout.readline().decode()  # the second fit is under way (its parts on the worker)
            assert second.strip() == "under way", (second, p.stderr.read().decode())
            if when == "during":
                _stop(dask_procs)
            else:
                os.killpg(worker.pid, signal.SIGKILL)
        else:
            _stop(dask_procs)
            p.stdin.write(b"\n")
            p.stdin.flush()
        t0 = time.monotonic()
        try:
            p.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            raise AssertionError("the fit still waits on the stopped scheduler (a hang)") from None
        took = time.monotonic() - t0
        err = p.stderr.read().decode()
        assert p.returncode == 2, (p.returncode, err)
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("ClusterError: "), err
        assert ("Dask scheduler" if when != "worker-killed" else "has had no worker for 3 s") in lines[0], err
        assert took < TIMEOUT + MARGIN, took
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
