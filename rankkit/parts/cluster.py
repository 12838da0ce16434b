"""Where the work runs: a Dask scheduler address, `local[:N]`, or a dask.distributed.Client.

    tcp://host:8786   an existing scheduler (`dask scheduler`, `dask worker tcp://host:8786`)
    local             a LocalCluster of worker processes on this machine (one per core)
    local:N           ... of N worker processes

Every failure to reach the cluster, or to keep it, becomes one ClusterError line (exit status 2):
an unreachable address, a cluster without workers, a scheduler lost in the middle of a run. A
failure inside a task that is the user's (bad data in a part) reaches the caller as itself.

No wait is unbounded. Every batch of tasks (a round of the fit, predict's and eval's map over the
parts) is collected by `Watch.gather`, which looks at the cluster whenever a second passes without
a result: a worker the batch was placed on that is gone, or workers that join a cluster left
without any, make it submit the batch again (new keys, placed on the workers alive; each task is a
deterministic function of its arguments, so the results are the same); a cluster without a worker
for RANKKIT_DASK_TIMEOUT seconds, or a scheduler out of reach for as long, is a ClusterError.
While it waits it says so in one line (to -v's log, or to a terminal; nothing under cron).

Dask's own logging (the `distributed`, `tornado` and `asyncio` loggers: tracebacks of lost
connections, "Couldn't gather keys") is routed to -v's log while rankkit holds a cluster it
opened itself, and dropped without -v: a cluster failure is one line on stderr.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import sys
import time
import warnings

from rankkit import processes
from rankkit.errors import DataError, RankkitError, UsageError

# seconds to reach a scheduler, to wait for a worker (the first one, or a new one once the last is
# lost) and for a lost scheduler to answer again (environment: RANKKIT_DASK_TIMEOUT, one value for all)
CONNECT_TIMEOUT = 10.0
WORKER_TIMEOUT = 10.0
TICK = 1.0  # seconds without a result after which Watch looks at the cluster
MAX_RESUBMITS = 100  # submissions of one batch lost in a row before giving up


def _timeouts() -> tuple[float, float]:
    text = os.environ.get("RANKKIT_DASK_TIMEOUT")
    if not text:
        return CONNECT_TIMEOUT, WORKER_TIMEOUT
    try:
        t = float(text)
        if not t > 0 or t != t or t == float("inf"):
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


class _Route(logging.Handler):
    """Dask's log records as one line each to -v's log (nothing without -v)."""

    def __init__(self, log):
        super().__init__(logging.DEBUG)
        self.log = log

    def emit(self, record):
        if self.log is None or record.levelno < logging.WARNING:
            return
        try:
            lines = record.getMessage().strip().splitlines() or [""]
            text = " ".join(lines[0].split())  # the first line only: no traceback
            self.log(f"dask {record.levelname.lower()} ({record.name}): {text[:300]}")
        except Exception:  # a log line must never end the run
            pass


_DASK_LOGGERS = ("distributed", "tornado", "asyncio", "bokeh")


class _DropDaskLeftovers(logging.Filter):
    """asyncio's "Task exception was never retrieved" for a task of Dask's client, logged when the
    task is collected, which may be after the run (at exit): Dask's internals, never the user's."""

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and type(exc).__module__.startswith(("distributed", "tornado")):
            return False
        return "site-packages/distributed/" not in str(getattr(record, "msg", ""))


_LEFTOVERS = _DropDaskLeftovers()


@contextlib.contextmanager
def quiet_dask(log=None):
    """Dask's logging routed to `log` (or dropped) and its warnings silenced, restored on exit."""
    handler = _Route(log)
    if _LEFTOVERS not in logging.getLogger("asyncio").filters:
        logging.getLogger("asyncio").addFilter(_LEFTOVERS)
    saved = []
    names = set(_DASK_LOGGERS) | {n for n in logging.root.manager.loggerDict if n.startswith(_DASK_LOGGERS)}
    for name in sorted(names):
        lg = logging.getLogger(name)
        saved.append((lg, lg.handlers[:], lg.propagate))
        lg.handlers = [handler] if name in _DASK_LOGGERS else []
        lg.propagate = name not in _DASK_LOGGERS
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"(distributed|dask|tornado|bokeh)(\.|$)")
            warnings.filterwarnings("ignore", category=ResourceWarning)
            yield
    finally:
        # Dask's abandoned asyncio tasks ("Task exception was never retrieved") are logged when they
        # are collected: collect them here, while the records still go to -v's log
        gc.collect()
        for lg, handlers, propagate in saved:
            lg.handlers, lg.propagate = handlers, propagate


def _notice_for(log):
    """Where a wait is announced: -v's log, else a terminal's stderr, else nowhere (cron)."""
    if log is not None:
        return log
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return lambda line: print(f"rankkit: {line}", file=sys.stderr, flush=True)
    except (ValueError, OSError):
        pass
    return None


@contextlib.contextmanager
def connect(address, log=None):
    """A connected Client for `address` (a string or a Client, used as it is and never closed),
    closed (with its LocalCluster) on exit. The client carries a Watch (`watch(client)`): the
    bounded waits of the run."""
    _require_dask()
    import dask
    from distributed import Client, LocalCluster

    if isinstance(address, Client):
        if address.status not in ("running", "connecting", "newly-created"):
            raise ClusterError(f"the Dask client given is {address.status}, not running")
        _WATCHES[id(address)] = Watch(address, str(address.scheduler.address), log)
        try:
            with quiet_dask(log):  # a ClusterError is the only thing shown, in Python too
                yield address
        finally:
            _WATCHES.pop(id(address), None)
        return
    kind, arg = parse_address(str(address))
    connect_timeout, worker_timeout = _timeouts()
    cluster = client = None
    with quiet_dask(log), dask.config.set({"distributed.comm.timeouts.connect": f"{connect_timeout:g}s",
                                           "distributed.admin.tick.limit": "1h"}):
        try:
            if kind == "local":
                n = arg or max(1, os.cpu_count() or 1)
                # one worker per core: each worker's kernels on cores / N threads, not all of them (the
                # environment also reaches a worker that its nanny restarts after a crash)
                threads = max(1, (os.cpu_count() or 1) // n)
                processes.before_spawning()  # the command line's workers: in a session of their own
                try:
                    # no dashboard, and the scheduler's HTTP server on a free loopback port (by default it
                    # takes 8787 and warns when another cluster holds it)
                    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                           scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                                           host="127.0.0.1", memory_limit=0, silence_logs=50,
                                           env={"NUMBA_NUM_THREADS": str(threads)})
                except Exception as exc:
                    raise ClusterError(f"--dask {address}: could not start a local Dask cluster ({short_text(exc)})") from None
                client = Client(cluster, timeout=connect_timeout)
                from rankkit.parts import worker as W

                client.run(W.set_threads, threads, callback_timeout=connect_timeout)
                if log:
                    log(f"started a local Dask cluster: {n} worker processes, {threads} kernel thread(s) each")
                where = f"--dask {address}"
            else:
                _probe(arg, connect_timeout)  # Client() itself waits without bound on a scheduler that does not answer
                try:
                    client = Client(arg, timeout=connect_timeout, set_as_default=False)
                except Exception as exc:
                    raise ClusterError(f"--dask {arg}: cannot reach a Dask scheduler there ({short_text(exc)})") from None
                notice = _notice_for(log)
                try:
                    idle = not _worker_info(client)
                except Exception as exc:
                    raise ClusterError(f"--dask {arg}: the Dask scheduler there does not answer ({describe_failure(exc)}, "
                                       f"waited {connect_timeout:g} s, RANKKIT_DASK_TIMEOUT)") from None
                if idle and notice:
                    notice(f"the Dask scheduler {arg} has no worker yet: waiting up to {worker_timeout:g} s for one")
                try:
                    client.wait_for_workers(1, timeout=worker_timeout)
                except Exception:
                    raise ClusterError(f"--dask {arg}: the scheduler has no worker (waited {worker_timeout:g} s, "
                                       f"RANKKIT_DASK_TIMEOUT); start one with `dask worker {arg}`") from None
                if log:
                    log(f"connected to the Dask scheduler {arg}: {len(workers(client))} workers")
                where = f"--dask {arg}"
            _WATCHES[id(client)] = Watch(client, where, log)
            yield client
        finally:
            if client is not None:
                _WATCHES.pop(id(client), None)
            with contextlib.suppress(Exception):
                if client is not None:
                    client.close(timeout=min(5, connect_timeout))
            with contextlib.suppress(Exception):
                if cluster is not None:
                    cluster.close(timeout=min(5, connect_timeout))


def _probe(address: str, timeout: float) -> None:
    """One request to the scheduler at `address` (its identity), bounded: a ClusterError if it is
    out of reach or does not answer within `timeout` seconds (alive but stopped: SIGSTOP, a frozen
    machine), which distributed.Client waits on without bound. Run on a loop of its own, closed
    after it: nothing is left running."""
    import asyncio

    from distributed.core import rpc

    async def ask_identity():
        r = rpc(address, timeout=timeout)
        try:
            return await asyncio.wait_for(r.identity(), timeout)
        finally:
            with contextlib.suppress(Exception):
                await r.close_rpc()

    try:
        asyncio.run(ask_identity())
    except Exception as exc:
        if _is_timeout(exc):  # refused until the bound (nothing listens), or a scheduler that does not answer
            raise ClusterError(f"--dask {address}: cannot reach a Dask scheduler there (no answer within {timeout:g} s, "
                               "RANKKIT_DASK_TIMEOUT)") from None
        raise ClusterError(f"--dask {address}: cannot reach a Dask scheduler there ({short_text(exc)})") from None


_WATCHES: dict = {}


def watch(client) -> "Watch":
    """The Watch of a client that `connect` opened (or a new one for a client given as it is)."""
    w = _WATCHES.get(id(client))
    if w is None:
        w = _WATCHES[id(client)] = Watch(client, "the Dask cluster", None)
    return w


class _Again(Exception):
    """The batch must be submitted again (a worker it was placed on is gone, or workers came back)."""


class Watch:
    """Collects a batch of tasks without ever waiting unboundedly (see the module's docstring)."""

    def __init__(self, client, where: str, log=None):
        self.client, self.where, self.log = client, where, log
        self.connect_timeout, self.worker_timeout = _timeouts()
        self.notice = _notice_for(log)
        self.empty_since = None  # no worker since (monotonic)
        self.down_since = None  # the scheduler out of reach since
        self.said_down = False
        self.resubmits = 0
        self.ids: dict = {}
        self._live: list | None = None  # the live workers at the last look

    def live(self) -> list[str]:
        """The workers alive now, sorted; waits (bounded) while there is none or the scheduler is out of reach."""
        while True:
            live = self._poll()
            if live:
                return live
            time.sleep(TICK / 4)

    def placed(self, live) -> set:
        """The workers of `live` with their identities (a worker restarted at the same address is another one)."""
        return {(a, self.ids.get(a, a)) for a in live}

    def gather(self, submit) -> list:
        """submit(live workers) -> futures; their results in order. The batch is submitted again
        when the cluster changes under it (a worker it was placed on is gone; workers joining a
        cluster that had none), so a fit goes on with the workers there are."""
        again = 0
        while True:
            live = self._live or self.live()  # the workers seen last (no request per round), or asked again
            futures = submit(live)
            try:
                return self._wait(futures, self.placed(live))
            except _Again:
                self._live = None
                self.resubmits += 1
                again += 1
                if again > MAX_RESUBMITS:
                    raise ClusterError(f"{self.where}: a batch of tasks was submitted {MAX_RESUBMITS} times and lost "
                                       "each time (workers keep dying?); no output written") from None
                continue
            finally:
                for f in futures:
                    with contextlib.suppress(Exception):
                        f.release()

    def ordered(self, submit_one, n: int):
        """submit_one(k, live workers) -> a future, for k in 0..n-1, all submitted at once; yields
        the results in order, each released once read (the caller holds one at a time). The tasks
        not yet read are submitted again when the cluster changes under them."""
        live = self._live or self.live()
        futures = [submit_one(k, live) for k in range(n)]
        placed = self.placed(live)
        again = 0
        try:
            for k in range(n):
                while True:
                    try:
                        (out,) = self._wait([futures[k]], placed)
                        break
                    except _Again:
                        self._live = None
                        again += 1
                        if again > MAX_RESUBMITS:
                            raise ClusterError(f"{self.where}: tasks were submitted {MAX_RESUBMITS} times and lost "
                                               "each time (workers keep dying?); no output written") from None
                        live = self.live()
                        placed = self.placed(live)
                        for j in range(k, n):
                            with contextlib.suppress(Exception):
                                futures[j].release()
                            futures[j] = submit_one(j, live)
                futures[k].release()
                futures[k] = None
                yield out
        finally:
            for f in futures:
                if f is not None:
                    with contextlib.suppress(Exception):
                        f.release()

    def _wait(self, futures, placed: set) -> list:
        from distributed import wait

        out = [None] * len(futures)
        for i, f in enumerate(futures):
            tries = 0
            while True:
                status = f.status
                if status == "pending":
                    try:
                        with self.client.as_current():  # distributed.wait asks for the current client
                            wait([f], timeout=TICK)
                    except Exception as exc:
                        if _is_timeout(exc):
                            self._check(placed)
                        elif isinstance(exc, (DataError, UsageError, ClusterError)) or not is_cluster_failure(exc):
                            raise
                        else:  # the connection lost under the wait (FuturesCancelledError): the cluster, bounded
                            self._check(placed, wait_back=True)
                    continue
                if status == "finished":
                    try:
                        # a finished task's result fetched from its worker; if that worker is gone, the
                        # scheduler computes it again: look at the cluster between growing timeouts
                        out[i] = f.result(timeout=TICK * 2 ** min(tries, 6))
                        break
                    except Exception as exc:
                        if _is_timeout(exc):
                            tries += 1
                            self._check(placed)
                            continue
                        self._failed(exc)
                        raise
                if status == "error":  # the task raised: the user's error, or a worker killed too often
                    try:
                        f.result(timeout=self.connect_timeout)
                    except Exception as exc:
                        if type(exc).__name__ == "KilledWorker":
                            raise ClusterError(f"{self.where}: {describe_failure(exc)}; no output written") from None
                        raise
                    continue
                # cancelled or lost: the scheduler forgot the task (a lost connection, a restart)
                self._check(placed, wait_back=True)
                raise _Again
        return out

    def _failed(self, exc):
        """An exception while fetching a finished task's result: the user's (bad data) re-raised as
        itself by the caller; a lost connection or cancelled task: a new submission once the
        cluster answers (bounded)."""
        if isinstance(exc, (DataError, UsageError, ClusterError)) or not is_cluster_failure(exc):
            return
        if type(exc).__name__ == "KilledWorker":
            raise ClusterError(f"{self.where}: {describe_failure(exc)}; no output written") from None
        self._check(set(), wait_back=True)

    def _poll(self) -> list[str]:
        """The live workers ([] if none); raises ClusterError once a wait outlasts its bound."""
        now = time.monotonic()
        live = None
        if self.client.status == "running":
            try:
                info = _worker_info(self.client)
                self.ids = {a: w.get("id", a) for a, w in info.items()}
                live = sorted(info)
            except Exception:  # a lost connection, or a scheduler that does not answer within the bound
                live = None
        self._live = live or None
        if live is None:  # the scheduler out of reach (since this look began: the look itself may have waited)
            if self.down_since is None:
                self.down_since = now
            if time.monotonic() - self.down_since > self.connect_timeout:
                raise ClusterError(f"{self.where}: lost the Dask scheduler (no answer for {self.connect_timeout:g} s, "
                                   "RANKKIT_DASK_TIMEOUT); no output written")
            if not self.said_down:
                self.said_down = True
                self._say(f"lost the Dask scheduler ({self.where}): waiting up to {self.connect_timeout:g} s for it")
            return []
        self.down_since, self.said_down = None, False
        if not live:
            if self.empty_since is None:
                self.empty_since = now
                self._say(f"the Dask cluster ({self.where}) has no worker left: waiting up to "
                          f"{self.worker_timeout:g} s for one to join")
            elif now - self.empty_since > self.worker_timeout:
                raise ClusterError(f"{self.where}: the Dask cluster has had no worker for {self.worker_timeout:g} s "
                                   "(RANKKIT_DASK_TIMEOUT); no output written")
            return []
        if self.empty_since is not None:
            self.empty_since = None
            if self.log:
                self.log(f"{len(live)} Dask worker(s) joined: going on")
        return live

    def _check(self, placed: set, wait_back: bool = False) -> None:
        """Looks at the cluster: _Again (submit the batch again) if a worker of the batch is gone,
        once the cluster has a worker again if it had none, or (wait_back) once it answers;
        ClusterError once a wait outlasts its bound."""
        live = self._poll()
        if not live:  # nothing can run: wait for a worker (or the scheduler), bounded, then submit again
            self.live()
            raise _Again
        gone = {a for a, _ in placed - self.placed(live)}
        if gone or wait_back:
            if self.log and gone:
                self.log(f"Dask worker(s) lost: {', '.join(sorted(gone))}; their tasks are submitted again")
            raise _Again

    def _say(self, line: str) -> None:
        if self.notice is not None:
            with contextlib.suppress(Exception):
                self.notice(line)


def _is_timeout(exc) -> bool:
    import asyncio

    return isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or type(exc).__name__ == "TimeoutError"


def workers(client) -> list[str]:
    """The addresses of the workers now connected, sorted (a stable first assignment of parts)."""
    return sorted(_worker_info(client))


def _worker_info(client) -> dict:
    """{address: the scheduler's facts about the worker}, fetched from the scheduler (bounded:
    a scheduler that is alive but does not answer, stopped by SIGSTOP, is a TimeoutError here)."""
    kwargs = {"n_workers": -1} if _takes_n(client) else {}
    return ask(client, client.scheduler.identity, **kwargs)["workers"]


def ask(client, call, *args, timeout: float | None = None, **kwargs):
    """call(*args, **kwargs) on the client's event loop (a coroutine function: a request to the
    scheduler, or one of the client's own), waited on at most `timeout` seconds (default
    RANKKIT_DASK_TIMEOUT): a TimeoutError past that. Every request rankkit makes of a scheduler
    outside the futures it waits on (which Watch bounds) goes through here: Dask's own sync calls
    wait without bound for a scheduler whose connection is open but which does not answer."""
    if timeout is None:
        timeout = _timeouts()[0]
    return client.sync(call, *args, callback_timeout=timeout, **kwargs)


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
    if names & {"CommClosedError", "CancelledError", "KilledWorker", "FutureCancelledError", "FuturesCancelledError",
                "TimeoutError",
                "StreamClosedError", "ConnectionRefusedError", "ConnectionResetError"}:
        return True
    return isinstance(exc, (OSError, asyncio.TimeoutError, concurrent.futures.CancelledError, asyncio.CancelledError))


def describe_failure(exc) -> str:
    name = type(exc).__name__
    text = short_text(exc)
    if name in ("CancelledError", "FutureCancelledError", "FuturesCancelledError"):
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
