"""Where the work runs: a Dask scheduler address, `local[:N]`, or a dask.distributed.Client.

    tcp://host:8786   an existing scheduler (`dask scheduler`, `dask worker tcp://host:8786`)
    local             a LocalCluster of worker processes on this machine (one per core)
    local:N           ... of N worker processes

Every failure to reach the cluster, or to keep it, becomes one ClusterError line (exit status 2):
an unreachable address, a cluster without workers, a scheduler lost in the middle of a run. A
failure inside a task that is the user's (bad data in a part) reaches the caller as itself.
"""

from __future__ import annotations

import contextlib
import os
import re

from rankkit.errors import DataError, RankkitError, UsageError

# seconds to reach a scheduler, and to wait for its first worker (environment: RANKKIT_DASK_TIMEOUT)
CONNECT_TIMEOUT = 10.0
WORKER_TIMEOUT = 30.0


def _timeouts() -> tuple[float, float]:
    text = os.environ.get("RANKKIT_DASK_TIMEOUT")
    if not text:
        return CONNECT_TIMEOUT, WORKER_TIMEOUT
    try:
        t = float(text)
        if not t > 0:
            raise ValueError
    except ValueError:
        raise ClusterError(f"RANKKIT_DASK_TIMEOUT '{text}' is not a number of seconds > 0") from None
    return t, t


class ClusterError(RankkitError):
    """The Dask cluster cannot be reached or was lost: one line, exit status 2."""


def dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def _require_dask():
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ClusterError("--dask needs Dask's distributed scheduler: pip install 'rankkit[dask]'") from None


_LOCAL = re.compile(r"^local(?::(\d+))?$")


def parse_address(address: str) -> tuple[str, int | None]:
    """('local', N or None) or ('remote', address). Anything else is a ClusterError."""
    m = _LOCAL.match(address.strip())
    if m:
        n = int(m.group(1)) if m.group(1) else None
        if n is not None and n < 1:
            raise ClusterError(f"--dask {address}: local:N needs N >= 1 worker processes")
        return "local", n
    if re.match(r"^(tcp|tls|inproc|ucx|ws|wss)://\S+$", address) or re.match(r"^[\w.\-]+:\d+$", address):
        return "remote", address
    raise ClusterError(f"--dask '{address}' is not a scheduler address (tcp://host:8786) or local[:N]")


@contextlib.contextmanager
def connect(address, log=None):
    """A connected Client for `address` (a string or a Client, used as it is and never closed),
    closed (with its LocalCluster) on exit."""
    _require_dask()
    import dask
    from distributed import Client, LocalCluster

    if isinstance(address, Client):
        if address.status not in ("running", "connecting", "newly-created"):
            raise ClusterError(f"the Dask client given is {address.status}, not running")
        yield address
        return
    kind, arg = parse_address(str(address))
    connect_timeout, worker_timeout = _timeouts()
    cluster = client = None
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": f"{connect_timeout:g}s",
                              "distributed.admin.tick.limit": "1h",
                              "logging.distributed": "error"}):
            if kind == "local":
                n = arg or max(1, os.cpu_count() or 1)
                # one worker per core: each worker's kernels on cores / N threads, not all of them (the
                # environment also reaches a worker that its nanny restarts after a crash)
                threads = max(1, (os.cpu_count() or 1) // n)
                try:
                    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                           host="127.0.0.1", memory_limit=0, silence_logs=50,
                                           env={"NUMBA_NUM_THREADS": str(threads)})
                except Exception as exc:
                    raise ClusterError(f"--dask {address}: could not start a local Dask cluster ({short_text(exc)})") from None
                client = Client(cluster, timeout=connect_timeout)
                from rankkit.distributed import worker as W

                client.run(W.set_threads, threads)
                if log:
                    log(f"started a local Dask cluster: {n} worker processes, {threads} kernel thread(s) each")
            else:
                try:
                    client = Client(arg, timeout=connect_timeout, set_as_default=False)
                except Exception as exc:
                    raise ClusterError(f"--dask {arg}: cannot reach a Dask scheduler there ({short_text(exc)})") from None
                try:
                    client.wait_for_workers(1, timeout=worker_timeout)
                except Exception:
                    raise ClusterError(f"--dask {arg}: the scheduler has no worker (waited {worker_timeout:g} s); "
                                       f"start one with `dask worker {arg}`") from None
                if log:
                    log(f"connected to the Dask scheduler {arg}: {len(workers(client))} workers")
            yield client  # the timeouts above also bound the client's attempts to reconnect to a lost scheduler
    finally:
        with contextlib.suppress(Exception):
            if client is not None:
                client.close(timeout=5)
        with contextlib.suppress(Exception):
            if cluster is not None:
                cluster.close(timeout=5)


def workers(client) -> list[str]:
    """The addresses of the workers now connected, sorted (a stable first assignment of parts)."""
    return sorted(client.scheduler_info(n_workers=-1)["workers"]) if _takes_n(client) else \
        sorted(client.scheduler_info()["workers"])


def _takes_n(client) -> bool:
    import inspect

    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        return False


def short_text(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= 160 else text[:157] + "..."


def is_cluster_failure(exc: BaseException) -> bool:
    """An exception that means the cluster (scheduler or the connection to it) failed, not the
    task: a cancelled future, a closed comm, a timeout, a worker killed too often."""
    import asyncio
    import concurrent.futures

    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"CommClosedError", "CancelledError", "KilledWorker", "FutureCancelledError", "TimeoutError",
                "StreamClosedError", "ConnectionRefusedError", "ConnectionResetError"}:
        return True
    return isinstance(exc, (OSError, asyncio.TimeoutError, concurrent.futures.CancelledError, asyncio.CancelledError))


def describe_failure(exc) -> str:
    name = type(exc).__name__
    text = short_text(exc)
    if name in ("CancelledError", "FutureCancelledError"):
        return "the scheduler was lost (tasks cancelled)"
    if name == "KilledWorker":
        return "a task killed its worker process repeatedly (out of memory?)"
    return f"{name}: {text}" if text and text != name else name


class cluster_failures:
    """Any cluster failure escaping the rounds (a client call outside them) as one ClusterError."""

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if exc is None or isinstance(exc, (DataError, UsageError, ClusterError)) or not isinstance(exc, Exception):
            return False
        if is_cluster_failure(exc):
            raise ClusterError(f"the Dask cluster failed during the run ({describe_failure(exc)}); no output written") from None
        return False
