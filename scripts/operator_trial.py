"""An operator trial of rankkit (issue 25): real `python -m rankkit` runs over families of faults.

    python scripts/operator_trial.py [--seed S] [--cases N] [--jobs J] [--quick] [--keep DIR]

Every case is one bash command in a directory of its own (a new session, so that every process
it starts can be found afterwards), checked against the promises of the README's "Operating
rankkit":

- exit status 0, 2, 3 or 128 + N for a signal the case sent; 1, a traceback or "internal error" is
  an internal error; a process killed by a signal it was not sent, or a hang, is a failure;
- a nonzero exit leaves every file that existed before the run byte-identical, and no run ever
  changes a file that is not one of its outputs; no temporary file `.NAME.~PID-HOST.XXXX.tmp`;
- exit 0 where the case must fail, or with outputs unlike an undisturbed run's (models compared
  by their weights, scores against a NumPy reference on the naive reader's parse), is "wrong exit 0";
- on an error, stderr is one line `rankkit: ...` (where the case captures stderr);
- no process of the run's session is left once it has exited (waited for up to 20 s).

Families: mutated real data files (data/ and ../shared/data/MQ2008) through train, predict and
eval; mutated, truncated and foreign model files through predict; hand-written bad inputs, bad
models, CLI misuse, the environment (caches, HOME, locales, thread settings), full disks
(RLIMIT_FSIZE, /dev/full), streams, signals at random moments, memory limits (ulimit -v),
concurrent writers, Python API misuse. The mutations, signal timing and limits come from the test
harnesses (tests/test_fuzz_reader.py, tests/test_fuzz_model.py, tests/test_signal_sweep.py,
tests/test_resource_sweep.py, tests/test_faults.py), imported, not copied.

--cases N: mutated data files (each run through train, predict and eval) and N/2 mutated model
files (each through predict); with the ~920 hand-written cases the default (260) gives ~1,900 runs. --quick: a few of each family.
Prints a summary table; exits 1 if any case failed, each failure listed with its exact command.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import numpy as np  # noqa: E402

import naive_svmlight as naive  # noqa: E402
from rankkit.io.model import read_model  # noqa: E402
from tests.test_cli import MODEL, MODEL2, SAMPLE_TEST, SAMPLE_TRAIN, _env  # noqa: E402
from tests.test_faults import _alive, _folds  # noqa: E402
from tests.test_fuzz_model import FOREIGN_FIXTURES  # noqa: E402
from tests.test_fuzz_model import mutate as mutate_model  # noqa: E402
from tests.test_fuzz_reader import mutate as mutate_data  # noqa: E402
from tests.test_model_integrity import as_format_1  # noqa: E402
from tests.test_resource_sweep import LIMITS_MB  # noqa: E402
from tests.test_signal_sweep import SIGNALS, _in_pythons_own_start  # noqa: E402
from tests.test_signal_sweep import _same as same_output  # noqa: E402

PY = sys.executable
BASH = shutil.which("bash") or "/bin/bash"  # found before a case's PATH is emptied
RK = f"{shlex.quote(PY)} -m rankkit"
SAMPLE_VALI = ROOT / "data" / "sample.vali.txt"
FOREIGN = ROOT / "tests" / "data" / "foreign"
SHARED = next((p for p in (ROOT.parent / "shared" / "data", Path("/work/shared/data")) if p.is_dir()), None)
TEMP = re.compile(r"^\..+\.tmp$")
LINGER = 20  # seconds a run's processes may take to end after it has exited
FSIZE = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_FSIZE, ({n}, {n})); "
         "sys.argv[0] = 'rankkit'; runpy.run_module('rankkit', run_name='__main__', alter_sys=True)")


@dataclass
class Case:
    family: str
    name: str
    script: str  # bash; `exec` the rankkit command where it is the last one
    files: dict = field(default_factory=dict)  # name -> bytes (or a Path to copy, or a callable(dir))
    outputs: tuple = ()  # files the run may write (on exit 0)
    must_fail: bool = False  # exit 0 is wrong
    check_ok: Callable | None = None  # (dir, stdout) -> None or what is wrong, on exit 0
    stderr_line: bool = True  # on an error, stderr must be one line `rankkit: ...`
    env: dict = field(default_factory=dict)
    signal: tuple | None = None  # (name, delay in seconds)
    allow: tuple = (0, 2, 3)
    stdin: bytes | None = b""
    codes_on_stdout: bool = False  # concurrency: each job prints `rc=N`
    runs: int = 1


@dataclass
class Outcome:
    case: Case
    code: int | str
    problems: list
    seconds: float
    where: str = ""


# -- the reference runs -----------------------------------------------------------------------------
class Ref:
    """Undisturbed runs, done once: the models, scores and eval outputs the cases compare with."""

    def __init__(self, base: Path, env: dict):
        self.base, self.env = base, env
        base.mkdir(parents=True, exist_ok=True)

        def go(cmd):
            proc = subprocess.run([BASH, "-c", cmd], cwd=base, env=env, capture_output=True, timeout=900)
            if proc.returncode != 0:
                sys.exit(f"operator_trial: the undisturbed run `{cmd}` failed: {proc.stderr.decode()[-500:]}")
            return proc.stdout

        go(f"{RK} train {SAMPLE_TRAIN} m.model -C 0.01")
        go(f"{RK} train {SAMPLE_TRAIN} m3.model -C 3")
        go(f"{RK} train {SAMPLE_TRAIN} k.model -C 0.1 --kernel rbf --landmarks 12")
        go(f"{RK} predict {SAMPLE_TEST} m.model s.txt")
        go(f"{RK} predict {SAMPLE_TEST} k.model ks.txt")
        self.eval_out = go(f"{RK} eval {SAMPLE_TEST} s.txt")
        self.model = base / "m.model"
        self.model_bytes = self.model.read_bytes()
        self.model3_bytes = (base / "m3.model").read_bytes()
        self.kernel_bytes = (base / "k.model").read_bytes()
        self.scores = (base / "s.txt").read_bytes()
        self.kscores = (base / "ks.txt").read_bytes()
        self.weights = read_model(str(self.model)).weights
        self.n_features = read_model(str(self.model)).n_features
        self.format1 = as_format_1(self.model_bytes.decode()).encode()
        self.kformat1 = as_format_1(self.kernel_bytes.decode()).encode()
        self.foreign_scores = {}
        head = b"".join(SAMPLE_TEST.read_bytes().splitlines(keepends=True)[:61])
        (base / "ftest.txt").write_bytes(head)
        self.foreign_test = head
        for name, fmt in FOREIGN_FIXTURES.items():
            self.foreign_scores[name] = go(f"{RK} predict ftest.txt {FOREIGN / name} --model-format {fmt}")


def weights_of(path: Path):
    return read_model(str(path)).weights


# -- checks of an exit 0 -----------------------------------------------------------------------------
def same_as(name: str, expected: bytes):
    def check(d: Path, stdout: bytes):
        p = d / name
        if not p.exists():
            return f"exit 0 without {name}"
        return None if same_output(p, expected) else f"{name} differs from the undisturbed run's"
    return check


def stdout_is(expected: bytes):
    return lambda d, stdout: None if stdout == expected else "stdout differs from the undisturbed run's"


def eval_is(expected: bytes):
    """eval's output but for its header row, which names the SCORES file as given (`-`: <stdin>)."""
    def strip(b):
        return [ln for ln in b.splitlines() if not ln.startswith(b"metric ")]
    return lambda d, stdout: None if strip(stdout) == strip(expected) else "eval's output differs from the undisturbed run's"


def both(*checks):
    def check(d, stdout):
        for c in checks:
            why = c(d, stdout)
            if why:
                return why
        return None
    return check


def _naive(text: bytes, labels_optional: bool):
    try:
        return naive.parse(text, False, labels_optional)[0]
    except naive.NaiveError:
        return None


def data_check(command: str, text: bytes, weights: np.ndarray):
    """Exit 0 on a mutated data file: the naive reference reader must read it, and the outputs must
    agree with that reading (scores: X.w from the naive parse; eval: one score per document)."""

    def check(d: Path, stdout: bytes):
        rows = _naive(text, labels_optional=(command == "predict"))
        if rows is None:
            return "exit 0 on data the reference reader refuses"
        if command == "train":
            try:
                model = read_model(str(d / "out.model"))
            except Exception as exc:  # noqa: BLE001
                return f"exit 0 but the model cannot be read: {exc}"
            if not np.all(np.isfinite(model.weights)):
                return "exit 0 with weights that are not finite"
            top = max((i for r in rows for i, _ in r[2]), default=-1)
            if model.n_features < top + 1:
                return f"model has {model.n_features} features, data {top + 1}"
        elif command == "predict":
            got = np.array([float(v) for v in (d / "out.txt").read_bytes().split()])
            want = np.array([sum(v * weights[i] for i, v in r[2] if i < weights.size) for r in rows])
            scale = np.array([sum(abs(v * weights[i]) for i, v in r[2] if i < weights.size) for r in rows]) + 1e-300
            if got.shape != want.shape or np.any(np.abs(got - want) > 1e-9 * scale + 1e-300):
                return "scores differ from X.w on the reference reader's parse"
        return None
    return check


def predict_model_check(kind: str, original: bytes, mutated: bytes, expected_scores: bytes | None):
    """Exit 0 on a mutated model: a checksummed model must be the original (same scores); a cut
    foreign file must never be read; a format-1 model gives finite scores, one per document."""

    def check(d: Path, stdout: bytes):
        out = stdout
        if kind == "format2":
            if mutated != original:
                return "a changed checksummed model was scored"
            return None if out == expected_scores else "scores differ from the original model's"
        if len(mutated) < len(original) and original.startswith(mutated):
            return "a model cut short was scored"
        if mutated == original and expected_scores is not None and out != expected_scores:
            return "scores of the unchanged model differ"
        vals = out.split()
        try:
            arr = np.array([float(v) for v in vals])
        except ValueError:
            return "scores that are not numbers"
        if not np.all(np.isfinite(arr)):
            return "scores that are not finite"
        return None
    return check


# -- running one case --------------------------------------------------------------------------------
def _session_members(sid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != sid:
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != b"Z":
                out.append(int(entry))
    return out


def _snapshot(d: Path) -> dict:
    snap = {}
    for root, dirs, files in os.walk(d):
        for f in files:
            p = Path(root) / f
            if p.is_symlink() or not p.is_file():  # a FIFO (read, it would hang the harness), a socket
                continue
            try:
                snap[str(p.relative_to(d))] = p.read_bytes()
            except OSError:
                pass
    return snap


def _setup(case: Case, d: Path) -> None:
    d.mkdir(parents=True)
    for name, content in case.files.items():
        target = d / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if callable(content):
            content(d)
        elif isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_bytes(content)


def run_case(case: Case, d: Path, env: dict) -> Outcome:
    problems = []
    _setup(case, d)
    before = _snapshot(d)
    started = time.monotonic()
    proc = subprocess.Popen([BASH, "-c", case.script], cwd=d, env=dict(env, **case.env), start_new_session=True,
                            stdin=subprocess.PIPE if case.stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timer = None
    if case.signal is not None:
        sig, delay = case.signal
        timer = threading.Timer(delay, lambda: proc.poll() is None and proc.send_signal(getattr(signal, sig)))
        timer.start()
    try:
        out, err = proc.communicate(case.stdin, timeout=600)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = "hang"
        problems.append("hang: no exit within 600 s")
    if timer is not None:
        timer.cancel()
    seconds = time.monotonic() - started
    text = err.decode("utf-8", "replace")
    # processes left: every member of the run's session, once it has exited
    deadline = time.monotonic() + LINGER
    left = _session_members(proc.pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [p for p in left if _alive(p)]
    if left:
        problems.append(f"processes left: {left}")
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    if case.codes_on_stdout and code == 0:
        codes = [int(c) for c in re.findall(rb"rc=(\d+)", out)]
        code = max(codes, key=lambda c: (c not in (0, 2, 3), c)) if codes else "none"
    allowed = set(case.allow) | ({128 + getattr(signal, case.signal[0])} if case.signal else set())
    python_start = False
    if isinstance(code, int) and code < 0:
        if case.signal and _in_pythons_own_start(code, err, case.signal[0]):
            python_start = True
        else:
            problems.append(f"killed by signal {-code}")
    elif case.signal and code == 1 and _in_pythons_own_start(code, err, case.signal[0]):
        python_start = True
    if python_start:  # before any rankkit code ran: Python's own ending, as the README documents and
        pass  # tests/test_signal_sweep.py accepts (counted in the table as exit 'python-start')
    elif code == 1 or "Traceback" in text or "internal error" in text:
        problems.append(f"internal error: {text.strip()[-300:]!r}")
    elif isinstance(code, int) and code >= 0 and code not in allowed:
        problems.append(f"exit {code} (allowed {sorted(allowed)}): {text.strip()[-300:]!r}")
    after = _snapshot(d)
    outputs = set(case.outputs)
    for name, data in before.items():
        if name in outputs and code == 0:
            continue
        if after.get(name) != data:
            problems.append(f"damaged: {name} " + ("removed" if name not in after else "changed"))
    temps = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if TEMP.match(f)]
    if temps:
        problems.append(f"temporary files left: {[os.path.relpath(t, d) for t in temps]}")
    if code == 0 and not python_start:
        if case.must_fail:
            problems.append(f"wrong exit 0: the case must fail (stderr {text.strip()[-200:]!r})")
        elif case.check_ok is not None:
            why = case.check_ok(d, out)
            if why:
                problems.append(f"wrong exit 0: {why}")
    elif isinstance(code, int) and code > 0 and case.stderr_line and not case.codes_on_stdout and not python_start:
        # one line for the error (after any documented one-line notes: "compiling kernels", the cache)
        lines = text.splitlines()
        notes = all(ln.startswith(("rankkit: note: ", "rankkit: warning: ")) for ln in lines[:-1])
        if not (text.endswith("\n") and lines and lines[-1].startswith("rankkit: ") and notes):
            problems.append(f"stderr not one line `rankkit: ...`: {text[-300:]!r}")
    return Outcome(case, "python-start" if python_start else code, problems, seconds, str(d))


# -- the case families ---------------------------------------------------------------------------------
def q(p) -> str:
    return shlex.quote(str(p))


def real_sources() -> list[tuple[str, list[bytes]]]:
    out = [("sample.train", SAMPLE_TRAIN.read_bytes().splitlines(keepends=True)),
           ("sample.test", SAMPLE_TEST.read_bytes().splitlines(keepends=True))]
    if SHARED is not None:
        for rel in ("MQ2008/Fold1/train.txt", "MQ2008/Fold2/test.txt", "MQ2008/Fold3/vali.txt"):
            if (SHARED / rel).is_file():
                with open(SHARED / rel, "rb") as fh:
                    out.append((rel, [fh.readline() for _ in range(3000)]))
    return out


def mutated_data(ref: Ref, n: int, rng: random.Random) -> list[Case]:
    cases = []
    sources = real_sources()
    for k in range(n):
        label, lines = sources[k % len(sources)]
        start = rng.randrange(max(1, len(lines) - 40))
        piece = b"".join(lines[start : start + rng.randint(20, 400)])
        text = mutate_data(piece, lines, rng)
        scores = b"".join(b"%.17g\n" % v for v in np.random.default_rng(k).normal(size=max(1, text.count(b"\n"))))
        name = f"{label}#{k}"
        files = {"in.txt": text, "out.model": ref.model_bytes, "out.txt": b"0.5\n", "scores.txt": scores}
        cases.append(Case("mutated data: train", name, f"exec {RK} train in.txt out.model -C 0.1 --max-iter 20",
                          dict(files), ("out.model",), check_ok=data_check("train", text, ref.weights)))
        cases.append(Case("mutated data: predict", name, f"exec {RK} predict in.txt {q(ref.model)} out.txt",
                          dict(files), ("out.txt",), check_ok=data_check("predict", text, ref.weights)))
        cases.append(Case("mutated data: eval", name, f"exec {RK} eval in.txt scores.txt", dict(files),
                          check_ok=_eval_check(text)))
    return cases


def _eval_check(text: bytes):
    def check(d, stdout):
        rows = _naive(text, labels_optional=False)
        if rows is None:
            return "exit 0 on data the reference reader refuses"
        n_scores = len((d / "scores.txt").read_bytes().split())
        if n_scores != len(rows):
            return f"exit 0 with {n_scores} scores for {len(rows)} documents"
        return None
    return check


def mutated_models(ref: Ref, n: int, rng: random.Random) -> list[Case]:
    nrng = np.random.default_rng(rng.randrange(2**32))
    kinds = [("format2", "linear", ref.model_bytes, ref.scores, ""), ("format2", "kernel", ref.kernel_bytes, ref.kscores, ""),
             ("format1", "linear", ref.format1, ref.scores, ""), ("format1", "kernel", ref.kformat1, ref.kscores, "")]
    for name, fmt in sorted(FOREIGN_FIXTURES.items()):
        data = (FOREIGN / name).read_bytes()
        kinds.append(("foreign", name, data, ref.foreign_scores[name], fmt))
        kinds.append(("foreign", name + " (detected)", data, ref.foreign_scores[name], ""))
    cases = []
    for k in range(n):
        kind, label, original, expected, fmt = kinds[k % len(kinds)]
        mutated = mutate_model(original, nrng)
        if rng.random() < 0.15:  # a plain cut: the case the foreign readers missed
            mutated = original[: rng.randrange(len(original))]
        test = "ftest.txt" if kind == "foreign" else "test.txt"
        files = {"m.model": mutated, test: ref.foreign_test if kind == "foreign" else SAMPLE_TEST.read_bytes()}
        opt = f" --model-format {fmt}" if fmt else ""
        cases.append(Case(f"mutated model: {kind}", f"{label}#{k}", f"exec {RK} predict {test} m.model{opt}", files,
                          check_ok=predict_model_check(kind, original, mutated, expected)))
    return cases


BAD_DATA = {
    "empty": b"",
    "only comments": b"# nothing\n# here\n",
    "blank lines": b"\n\n\n",
    "NUL byte": b"1 qid:1 1:0.5\n\x00\n",
    "NUL inside a value": b"1 qid:1 1:0.\x005\n0 qid:1 1:1\n",
    "label nan": b"nan qid:1 1:1\n0 qid:1 1:2\n",
    "label inf": b"inf qid:1 1:1\n0 qid:1 1:2\n",
    "label 1e308": b"1e308 qid:1 1:1\n0 qid:1 1:2\n",
    "label 1e400": b"1e400 qid:1 1:1\n0 qid:1 1:2\n",
    "value 1e400": b"1 qid:1 1:1e400\n0 qid:1 1:2\n",
    "value 1e308 sums to inf": b"1 qid:1 1:1.7e308 2:1.7e308\n0 qid:1 1:-1.7e308\n",
    "value nan": b"1 qid:1 1:nan\n0 qid:1 1:2\n",
    "index 0 one-based": b"1 qid:1 0:1\n0 qid:1 1:2\n",
    "index 2147483648": b"1 qid:1 2147483648:1\n0 qid:1 1:2\n",
    "index 2147483647": b"1 qid:1 2147483647:1\n0 qid:1 1:2\n",
    "index 99999999": b"1 qid:1 99999999:1\n0 qid:1 1:2\n",
    "negative index": b"1 qid:1 -3:1\n0 qid:1 1:2\n",
    "unsorted indices": b"1 qid:1 3:1 2:1\n0 qid:1 1:2\n",
    "duplicate index": b"1 qid:1 2:1 2:1\n0 qid:1 1:2\n",
    "colon alone": b"1 qid:1 :\n0 qid:1 1:2\n",
    "missing qid on one line": b"1 qid:1 1:1\n0 1:2\n",
    "qid huge": b"1 qid:9223372036854775808 1:1\n0 qid:9223372036854775808 1:2\n",
    "query split in two places": b"1 qid:1 1:1\n0 qid:2 1:2\n1 qid:2 1:3\n0 qid:1 1:0\n",
    "one document per query": b"1 qid:1 1:1\n0 qid:2 1:2\n2 qid:3 1:3\n",
    "one label per query": b"1 qid:1 1:1\n1 qid:1 1:2\n0 qid:2 1:3\n0 qid:2 1:1\n",
    "no features at all": b"1 qid:1\n0 qid:1\n",
    "CRLF": b"1 qid:1 1:1 2:0.5\r\n0 qid:1 1:2 2:0.1\r\n2 qid:2 1:0.3\r\n0 qid:2 2:1\r\n",
    "lone CR": b"1 qid:1 1:1 2:0.5\r0 qid:1 1:2 2:0.1\r",
    "UTF-16 BOM": "1 qid:1 1:1\n0 qid:1 1:2\n".encode("utf-16"),
    "UTF-8 BOM": b"\xef\xbb\xbf1 qid:1 1:1\n0 qid:1 1:2\n",
    "latin-1 comment": b"1 qid:1 1:1 # caf\xe9\n0 qid:1 1:2\n",
    "very long line": b"1 qid:1 " + b" ".join(b"%d:1" % i for i in range(1, 200001)) + b"\n0 qid:1 1:2\n",
    "a JSON file": b'{"qid": 1, "features": [1, 2]}\n',
    "a PNG image": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
    "gzip that is cut": gzip.compress(SAMPLE_TEST.read_bytes())[:500],
    "gzip of junk": gzip.compress(b"\x00\x01junk" * 100),
    "a rankkit model": MODEL2.encode(),
    "hex value": b"1 qid:1 1:0x1F\n0 qid:1 1:2\n",
    "value 1_0": b"1 qid:1 1:1_0\n0 qid:1 1:2\n",
    "qid: empty": b"1 qid: 1:1\n0 qid: 1:2\n",
}
GOOD_VARIANTS = {"CRLF", "lone CR", "latin-1 comment", "UTF-8 BOM"}


def bad_inputs(ref: Ref) -> list[Case]:
    cases = []
    for label, text in BAD_DATA.items():
        suffix = ".gz" if label.startswith("gzip") else ".txt"
        inp = "in" + suffix
        files = {inp: text, "out.model": ref.model_bytes, "out.txt": b"0.5\n", "scores.txt": b"0.1\n0.2\n0.3\n0.4\n"}
        cases.append(Case("input", f"train: {label}", f"exec {RK} train {inp} out.model -C 0.1", files,
                          ("out.model",), check_ok=data_check("train", text, ref.weights) if suffix == ".txt" else None))
        cases.append(Case("input", f"predict: {label}", f"exec {RK} predict {inp} {q(ref.model)} out.txt", files,
                          ("out.txt",), check_ok=data_check("predict", text, ref.weights) if suffix == ".txt" else None))
        cases.append(Case("input", f"eval: {label}", f"exec {RK} eval {inp} scores.txt", files,
                          check_ok=_eval_check(text) if suffix == ".txt" else None))
    # inputs that are not files of data
    for label, path, setup in [("missing file", "nope.txt", None), ("a directory", "dir", "dir"),
                               ("/dev/zero", "/dev/zero", None), ("unreadable", "locked.txt", "locked"),
                               ("dangling link", "dangle.txt", "dangle"), ("link loop", "loop.txt", "loop"),
                               ("/dev/null", "/dev/null", None), ("path through a file", "in.txt/x", None)]:
        files = {"in.txt": SAMPLE_TEST.read_bytes(), "out.model": ref.model_bytes, "scores.txt": ref.scores}
        if setup:
            files["setup"] = _special(setup)
        for cmd in (f"train {path} out.model", f"predict {path} {q(ref.model)} out.txt", f"eval {path} scores.txt",
                    f"eval in.txt {path}", f"predict in.txt {path} out.txt", f"convert {path} out.model --to rankkit"):
            cases.append(Case("input", f"{label}: {cmd.split()[0]} ({cmd})", f"exec {RK} {cmd}", files,
                              ("out.model", "out.txt"), must_fail=(os.geteuid() != 0 or setup != "locked")))
    # scores files that do not fit the data
    for label, scores in [("fewer scores", ref.scores[: ref.scores.rindex(b"\n", 0, -1) + 1]), ("one more", ref.scores + b"1\n"),
                          ("nan score", b"nan\n" + ref.scores.split(b"\n", 1)[1]), ("text", b"hello\n" * 527),
                          ("empty", b""), ("inf", b"inf\n" + ref.scores.split(b"\n", 1)[1]),
                          ("two columns", ref.scores.replace(b"\n", b" 1\n")), ("NUL", b"\x00" * 100)]:
        cases.append(Case("input", f"eval scores: {label}", f"exec {RK} eval {q(SAMPLE_TEST)} scores.txt",
                          {"scores.txt": scores}, must_fail=True))
    return cases


def _special(kind):
    def make(d: Path):
        if kind == "dir":
            (d / "dir").mkdir()
        elif kind == "locked":
            (d / "locked.txt").write_bytes(SAMPLE_TEST.read_bytes())
            os.chmod(d / "locked.txt", 0)
        elif kind == "dangle":
            os.symlink("nowhere", d / "dangle.txt")
        elif kind == "loop":
            os.symlink("loop.txt", d / "loop.txt")
        elif kind == "rodir":
            (d / "ro").mkdir()
            os.chmod(d / "ro", 0o500)
    return make


BAD_MODELS = {
    "empty": b"",
    "format 1 (no checksum)": MODEL.encode(),
    "format 2": MODEL2.encode(),
    "wrong checksum": MODEL2.encode().replace(b"0.25", b"0.26"),
    "weights count too high": MODEL2.encode().replace(b"weights 3", b"weights 4"),
    "weight nan": MODEL.encode().replace(b"0.25", b"nan"),
    "weight 1e400": MODEL.encode().replace(b"0.25", b"1e400"),
    "n_features 0": MODEL.encode().replace(b"n_features 3", b"n_features 0"),
    "n_features huge": MODEL.encode().replace(b"n_features 3", b"n_features 99999999999999"),
    "weights huge": MODEL.encode().replace(b"weights 3", b"weights 99999999999"),
    "unknown version": MODEL.encode().replace(b"model 1", b"model 99"),
    "no final newline": MODEL2.encode()[:-1],
    "CRLF": MODEL2.encode().replace(b"\n", b"\r\n"),
    "data file": SAMPLE_TEST.read_bytes()[:2000],
    "NUL bytes": b"\x00" * 64,
    "svm_rank cut mid-token": (FOREIGN / "svm_rank.model").read_bytes()[:-7],
    "sofia-ml cut": (FOREIGN / "sofia-ml.model").read_bytes()[:-3],
    "liblinear cut": (FOREIGN / "liblinear-ranksvm.model").read_bytes()[:-5],
    "svmlight cut mid-token": (FOREIGN / "svmlight-rank.model").read_bytes()[:-4],
    "gzip cut": gzip.compress(MODEL2.encode())[:20],
    "binary junk": bytes(range(256)),
    "sofia-ml with nan": b"nan 1 2 3\n",
    "svm_rank with no weights line": b"SVM-light Version V6.20\n0 # kernel type\n",
}


def bad_models(ref: Ref) -> list[Case]:
    cases = []
    for label, data in BAD_MODELS.items():
        ok = label in ("format 1 (no checksum)", "format 2", "CRLF")
        inp = "m.model.gz" if label.startswith("gzip") else "m.model"
        files = {inp: data, "t.txt": b"1 qid:1 1:1 2:2 3:3\n0 qid:1 1:3 2:1\n2 qid:2 3:1\n0 qid:2 1:1\n",
                 "out.txt": b"old\n"}
        for fmt in ("scores", "trec", "ranked"):
            cases.append(Case("models", f"predict --format {fmt}: {label}",
                              f"exec {RK} predict t.txt {inp} out.txt --format {fmt}", files, ("out.txt",),
                              must_fail=not ok and label != "CRLF"))
        cases.append(Case("models", f"convert: {label}", f"exec {RK} convert {inp} out.svm --to svm_rank", files,
                          ("out.svm",), must_fail=not ok))
        cases.append(Case("models", f"predict - (stdin): {label}", f"exec {RK} predict t.txt - out.txt", files,
                          ("out.txt",), stdin=data, must_fail=not ok and label != "CRLF" and not label.startswith("gzip")))
    return cases


def cli_misuse(ref: Ref) -> list[Case]:
    D, V, T = q(SAMPLE_TRAIN), q(SAMPLE_VALI), q(SAMPLE_TEST)
    M = q(ref.model)
    fail = [
        f"train {D} m.model -C 0", f"train {D} m.model -C -1", f"train {D} m.model -C nan", f"train {D} m.model -C inf",
        f"train {D} m.model -C abc", f"train {D} m.model -C ''", f"train {D} m.model --tol 0", f"train {D} m.model --tol nan",
        f"train {D} m.model --max-iter 0", f"train {D} m.model --max-iter -5", f"train {D} m.model --solver nope",
        f"train {D} m.model --loss nope", f"train {D} m.model --gamma 1", f"train {D} m.model --landmarks 5",
        f"train {D} m.model --degree 3", f"train {D} m.model --coef0 1", f"train {D} m.model --patience 3",
        f"train {D} m.model --delta ''", f"train {D} m.model --delta gain", f"train {D} m.model --delta 0,1",
        f"train {D} m.model --rescale margin --delta 0,nan", f"train {D} m.model --rescale margin --delta abc",
        f"train {D} m.model --solver pegasos -C 1", f"train {D} m.model --solver newton --lambda 0.1",
        f"train {D} m.model --solver newton --iterations 10", f"train {D} m.model --solver sgd --iterations 0",
        f"train {D} m.model --solver sgd --batch-size 1000000000000", f"train {D} m.model --solver sgd --batch-size 0",
        f"train {D} m.model --solver factorized -K 1000000000", f"train {D} m.model --solver factorized -K 0",
        f"train {D} m.model --kernel poly --degree 1000000", f"train {D} m.model --kernel rbf --gamma -1",
        f"train {D} m.model --kernel rbf --landmarks 0",
        f"train {D} m.model --kernel nope", f"train {D} m.model --threads 0", f"train {D} m.model --eta0 0",
        f"train {D} m.model --solver sgd --eta nope", f"train {D}", "train", f"train {D} m.model extra.model",
        f"train {D} m.model --no-such-option", f"train {D} {D}",
        f"train {D} newdir/", f"train {D} newdir/.", f"train {D} .", f"train {D} nodir/m.model", f"train {D} ''",
        f"train {D} notes.txt", f"train {D} data.txt", f"train {D} link.txt", f"train {D} m.model --valid {V}",
        f"train {D} m.model --query-weights nope.txt", f"train {D} m.model --query-weights notes.txt",
        f"predict {T} {M} {T}", f"predict {T} {M} {M}", f"predict {T} {M} old.model", f"predict {T} {M} data.txt",
        f"predict {T} {M} --format nope", f"predict {T} {M} --model-format nope", f"predict {T} {M} --model-format svm_rank",
        f"predict {T} {M} --model-format sofia-ml", f"predict {T} {M} --model-format liblinear", f"predict {T} {M} out/",
        f"predict {T} {M} --threads 0", f"predict {T}", f"predict {T} {M} a.txt b.txt", f"predict {T} {M} -C 1",
        f"predict {T} {M} nodir/s.txt", f"predict {T} {M} --group nope.txt", f"predict {T} {M} --tag x",
        f"predict {T} {M} --out-dir o", f"predict {T} {M} .",
        f"eval {T}", f"eval {T} {M}", f"eval {T} scores.txt -m nope", f"eval {T} scores.txt -m ndcg@0",
        f"eval {T} scores.txt -m ndcg@-1", f"eval {T} scores.txt -m ndcg@abc", f"eval {T} scores.txt --permutations 5",
        f"eval {T} scores.txt --seed -1", f"eval {T} scores.txt --convention nope", f"eval {T} scores.txt --format nope",
        f"eval --qrels nope.txt run.txt", f"eval {T} scores.txt --test nope", f"eval {T} scores.txt --empty-query 2",
        f"eval {T} scores.txt --test t", f"eval {T} scores.txt -C 1", f"eval {T} {T}", f"eval {T} scores.txt -m p@0",
        f"path {D}", f"path {D} {V} --ratio 1", f"path {D} {V} --ratio inf", f"path {D} {V} --n-points 1",
        f"path {D} {V} --method grid --n-points 1000000000", f"path {D} {V} --plot p.pdf",
        f"path {D} {V} --table t.svg --plot t.svg", f"path {D} {V} --out-model {V}", f"path {D} {V} --table link.txt",
        f"path {D} {V} --method nope", f"path {D} {V} --kernel rbf --method grid", f"path --folds nope",
        f"path --folds {q(ROOT / 'data')}", f"path {D} {V} --jobs 0", f"path {D} {V} --lambda-min 0",
        f"path {D} {V} --max-events 0", f"path {D} {V} -C 1", f"path {D} {V} --select nope", f"path {D} {V} --out-model m/",
        f"path {D} {V} --table old.model", f"path {D} {V} --degree 3",
        f"convert {M} out.txt", f"convert {M} out.txt --to nope", f"convert {M} {M} --to rankkit",
        f"convert {M} data.txt --to svm_rank", f"convert {q(ref.base / 'k.model')} out.txt --to svm_rank",
        "nosuchcommand", "--no-such-flag",
        f"experiment nope", f"experiment {q(ROOT / 'data')}",
    ]
    ok = [f"train {D} m.model -C 0.01", f"train {D} m.model -C 0.01 --threads 1", f"train {D} m.model -C 0.01 --threads 64",
          f"train {D} ./m.model -C 0.01", f"train {D} m.model -C 1e-2", f"predict {T} {M}", f"predict {T} {M} s.txt",
          f"predict {T} {M} --threads 1", f"eval {T} scores.txt", f"eval {T} scores.txt --threads 1", "--help",
          "train --help", "--version"]
    expect = {f"train {D} m.model -C 0.01": same_as("m.model", ref.model_bytes),
              f"train {D} m.model -C 0.01 --threads 1": same_as("m.model", ref.model_bytes),
              f"train {D} m.model -C 0.01 --threads 64": same_as("m.model", ref.model_bytes),
              f"train {D} ./m.model -C 0.01": same_as("m.model", ref.model_bytes),
              f"train {D} m.model -C 1e-2": same_as("m.model", ref.model_bytes),
              f"predict {T} {M}": stdout_is(ref.scores), f"predict {T} {M} s.txt": same_as("s.txt", ref.scores),
              f"predict {T} {M} --threads 1": stdout_is(ref.scores), f"eval {T} scores.txt": eval_is(ref.eval_out),
              f"eval {T} scores.txt --threads 1": eval_is(ref.eval_out)}

    def setup(d: Path):
        (d / "notes.txt").write_text("my notes\n")
        shutil.copy(SAMPLE_TEST, d / "data.txt")
        os.symlink(str(SAMPLE_TRAIN), d / "link.txt")
        (d / "old.model").write_bytes(ref.model3_bytes)
        (d / "scores.txt").write_bytes(ref.scores)
        (d / "o").mkdir()
        (d / "out").mkdir()
        (d / "m").mkdir()

    either = [f"train {D} m.model -C 1 -C 2",  # the last value, as Click and most tools take it
              f"train {D} m.model -C 0.1 --kernel rbf --landmarks 1000000000",  # at most every document
              f"train {D} m.model -C 0.01 --threads 100000000000000000000"]  # at most the cores
    cases = [Case("cli", args, f"exec {RK} {args}", {"setup": setup}, ("m.model",)) for args in either]
    outputs = ("m.model", "s.txt", "out.txt", "t.tsv", "t.svg", "p.svg", "newdir")
    for args in fail:
        cases.append(Case("cli", args, f"exec {RK} {args}", {"setup": setup}, outputs, must_fail=True))
    for args in ok:
        cases.append(Case("cli", args, f"exec {RK} {args}", {"setup": setup}, outputs, check_ok=expect.get(args)))
    return cases


def environment(ref: Ref, scratch: Path) -> list[Case]:
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    M = q(ref.model)
    ro = scratch / "ro-cache"
    ro.mkdir(exist_ok=True)
    os.chmod(ro, 0o500)
    hijacked = scratch / "hijacked-cache"
    hijacked.mkdir(exist_ok=True)
    os.chmod(hijacked, 0o777)
    junk_cache = scratch / "junk-cache"
    junk_cache.mkdir(exist_ok=True)
    for sub in ("rankkit-aot", "x"):
        (junk_cache / sub).write_bytes(b"\x00junk")
    envs = {
        "NUMBA_CACHE_DIR not writable": {"NUMBA_CACHE_DIR": "/dev/null/cache"},
        "NUMBA_CACHE_DIR read-only": {"NUMBA_CACHE_DIR": str(ro)},
        "NUMBA_CACHE_DIR world-writable": {"NUMBA_CACHE_DIR": str(hijacked)},
        "NUMBA_CACHE_DIR of junk files": {"NUMBA_CACHE_DIR": str(junk_cache)},
        "NUMBA_CACHE_DIR empty string": {"NUMBA_CACHE_DIR": ""},
        "HOME missing": {"HOME": "/nonexistent/home"},
        "HOME /dev/null": {"HOME": "/dev/null", "XDG_CACHE_HOME": "/dev/null/x"},
        "HOME read-only": {"HOME": str(ro)},
        "TMPDIR missing": {"TMPDIR": "/nonexistent/tmp"},
        "TMPDIR a file": {"TMPDIR": "/dev/null"},
        "LC_ALL C": {"LC_ALL": "C", "LANG": "C"},
        "LC_ALL tr_TR": {"LC_ALL": "tr_TR.UTF-8"},
        "LC_ALL de_DE (comma decimals)": {"LC_ALL": "de_DE.UTF-8", "LC_NUMERIC": "de_DE.UTF-8"},
        "LANG unknown": {"LANG": "xx_YY.FOO"},
        "PYTHONIOENCODING ascii": {"PYTHONIOENCODING": "ascii"},
        "OMP_NUM_THREADS 0": {"OMP_NUM_THREADS": "0"},
        "OMP_NUM_THREADS abc": {"OMP_NUM_THREADS": "abc"},
        "OMP_NUM_THREADS 1000": {"OMP_NUM_THREADS": "1000"},
        "NUMBA_NUM_THREADS 1": {"NUMBA_NUM_THREADS": "1"},
        "NUMBA_NUM_THREADS abc": {"NUMBA_NUM_THREADS": "abc"},
        "NUMBA_NUM_THREADS 0": {"NUMBA_NUM_THREADS": "0"},
        "OPENBLAS_NUM_THREADS 0": {"OPENBLAS_NUM_THREADS": "0"},
        "MKL/OPENBLAS 1": {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
        "PYTHONHASHSEED 123": {"PYTHONHASHSEED": "123"},
        "TZ odd": {"TZ": "Nowhere/Odd"},
        "RANKKIT_AOT 0": {"RANKKIT_AOT": "0"},
        "RANKKIT_AOT junk": {"RANKKIT_AOT": "maybe"},
        "RANKKIT_DEBUG 0": {"RANKKIT_DEBUG": "0"},
        "PATH empty": {"PATH": ""},
        "COLUMNS 5": {"COLUMNS": "5"},
    }
    cases = []
    for label, env in envs.items():
        files = {"scores.txt": ref.scores, "m.model": ref.model3_bytes}
        cases.append(Case("environment", f"train: {label}", f"exec {RK} train {D} m.model -C 0.01", files, ("m.model",),
                          check_ok=same_as("m.model", ref.model_bytes), env=env, stderr_line=False))
        cases.append(Case("environment", f"predict: {label}", f"exec {RK} predict {T} {M}", files,
                          check_ok=stdout_is(ref.scores), env=env, stderr_line=False))
        cases.append(Case("environment", f"eval: {label}", f"exec {RK} eval {T} scores.txt", files,
                          check_ok=eval_is(ref.eval_out) if "tr_TR" not in label else None, env=env, stderr_line=False))
    # the working directory: deleted under the run, read-only, umask
    for cmd in (f"train {D} m.model -C 0.01", f"predict {T} {M} s.txt", f"eval {T} {q(ref.base / 's.txt')}"):
        cases.append(Case("environment", f"cwd deleted: {cmd.split()[0]}", f"mkdir gone && cd gone && rmdir ../gone && exec {RK} {cmd}",
                          must_fail=not cmd.startswith("eval")))
        cases.append(Case("environment", f"cwd read-only: {cmd.split()[0]}",
                          f"mkdir ro && cd ro && chmod 500 . && {RK} {cmd}; rc=$?; chmod 700 .; exit $rc",
                          outputs=("ro/m.model", "ro/s.txt"), must_fail=not cmd.startswith("eval") and os.geteuid() != 0))
        cases.append(Case("environment", f"umask 077: {cmd.split()[0]}", f"umask 077 && exec {RK} {cmd}",
                          outputs=("m.model", "s.txt")))
    return cases


def full_disk(ref: Ref) -> list[Case]:
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    M = q(ref.model)
    cases = []
    for n in (0, 1, 100, 1000, 4096, 10000, 100000, 1 << 20):
        wrapper = f"{shlex.quote(PY)} -c {shlex.quote(FSIZE.format(n=n))}"
        files = {"m.model": ref.model3_bytes, "s.txt": b"0.5\n" * 10, "scores.txt": ref.scores}
        for cmd, outs, check in [(f"train {D} m.model -C 0.01", ("m.model",), same_as("m.model", ref.model_bytes)),
                                 (f"train {D} new.model -C 0.01", ("new.model",), same_as("new.model", ref.model_bytes)),
                                 (f"predict {T} {M} s.txt", ("s.txt",), same_as("s.txt", ref.scores)),
                                 (f"predict {T} {M} --format trec s.txt", ("s.txt",), None),
                                 (f"convert {M} s.svm --to svm_rank", ("s.svm",), None),
                                 (f"eval {T} scores.txt --format json", (), None)]:
            cases.append(Case("full disk", f"RLIMIT_FSIZE {n}: {cmd}", f"exec {wrapper} {cmd}", files, outs, check_ok=check))
        cases.append(Case("full disk", f"RLIMIT_FSIZE {n}: eval > file", f"{wrapper} eval {T} scores.txt > e.txt",
                          files, ("e.txt",)))
    for cmd in (f"train {D} /dev/full -C 0.01", f"predict {T} {M} /dev/full", f"convert {M} /dev/full --to svm_rank"):
        cases.append(Case("full disk", f"/dev/full: {cmd}", f"exec {RK} {cmd}", must_fail=True))
    return cases


def streams(ref: Ref) -> list[Case]:
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    M = q(ref.model)
    big = lambda d: (d / "big.txt").write_bytes(  # noqa: E731 - more than a pipe buffer of scores
        b"".join(SAMPLE_TEST.read_bytes().replace(b"qid:", f"qid:{k}0".encode()) for k in range(1, 30)))
    cases = []
    for cmd, must in [(f"train - m.model -C 0.01", True), (f"predict {T} - s.txt", True), (f"eval {T} -", True),
                      (f"predict - {M} s.txt", True), ("convert - out.txt --to rankkit", True)]:
        cases.append(Case("streams", f"stdin closed: {cmd}", f"exec {RK} {cmd} <&-", must_fail=must, stdin=None))
        cases.append(Case("streams", f"stdin /dev/null: {cmd}", f"exec {RK} {cmd} </dev/null", must_fail=must,
                          stdin=None))
    cases.append(Case("streams", "train from a pipe", f"cat {D} | exec {RK} train - m.model -C 0.01", outputs=("m.model",),
                      check_ok=same_as("m.model", ref.model_bytes), stdin=None))
    cases.append(Case("streams", "predict data from a pipe", f"cat {T} | {RK} predict - {M}", check_ok=stdout_is(ref.scores),
                      stdin=None))
    cases.append(Case("streams", "predict model from a pipe", f"cat {M} | {RK} predict {T} -", check_ok=stdout_is(ref.scores),
                      stdin=None))
    cases.append(Case("streams", "eval scores from a pipe", f"cat {q(ref.base / 's.txt')} | {RK} eval {T} -",
                      check_ok=eval_is(ref.eval_out), stdin=None))
    for redirect in (">&-", ">/dev/full"):
        for cmd in (f"predict {T} {M}", f"eval {T} {q(ref.base / 's.txt')}", f"convert {M} - --to svm_rank",
                    f"predict {T} {M} --format trec", "--help", "--version"):
            cases.append(Case("streams", f"stdout {redirect}: {cmd}", f"exec {RK} {cmd} {redirect}", must_fail=True))
    for redirect in ("2>&-", "2>/dev/full", "2>&- >&-"):
        for cmd, check in [(f"train {D} m.model -C 0.01 -v", same_as("m.model", ref.model_bytes)),
                           (f"predict {T} {M} s.txt -v", same_as("s.txt", ref.scores)),
                           (f"train {D} m.model -C 0.01 --max-iter 1", same_as("m.model", None) if False else None)]:
            cases.append(Case("streams", f"stderr {redirect}: {cmd}", f"exec {RK} {cmd} {redirect}",
                              outputs=("m.model", "s.txt"), check_ok=check, stderr_line=False))
        cases.append(Case("streams", f"stderr {redirect}: a bad input", f"exec {RK} train nope.txt m.model {redirect}",
                          must_fail=True, stderr_line=False))
    pipe = "; exit ${PIPESTATUS[0]}"
    cases += [
        Case("streams", "predict | head -1", f"{RK} predict big.txt {M} | head -1{pipe}", {"big": big}),
        Case("streams", "predict /dev/stdout | head -3", f"{RK} predict big.txt {M} /dev/stdout | head -3{pipe}", {"big": big}),
        Case("streams", "predict --format ranked | head -2", f"{RK} predict big.txt {M} --format ranked | head -2{pipe}",
             {"big": big}),
        Case("streams", "eval --per-query | head -1", f"{RK} eval big.txt big.scores --per-query | head -1{pipe}",
             {"big": big, "scores": lambda d: subprocess.run(f"{RK} predict big.txt {M} big.scores", shell=True, cwd=d,
                                                            env=_trial_env)}),
        Case("streams", "train -v 2>&1 | head -1", f"{RK} train {D} m.model -C 0.01 -v 2>&1 | head -1{pipe}",
             outputs=("m.model",), check_ok=same_as("m.model", ref.model_bytes)),
        Case("streams", "path summary | head -1",
             f"{RK} path --folds folds -C 0.01 -C 0.1 --out-dir m --table t.tsv | head -1{pipe}",
             {"folds": lambda d: (_folds(d), (d / "m").mkdir())}, outputs=("t.tsv",)),
        Case("streams", "predict | true (reader never reads)", f"{RK} predict big.txt {M} | true{pipe}", {"big": big}),
        Case("streams", "convert - | head -c 10", f"{RK} convert {M} - --to svm_rank | head -c 10{pipe}"),
    ]
    return cases


def signals(ref: Ref, n: int, rng: random.Random, durations: dict) -> list[Case]:
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    M = q(ref.model)
    commands = {
        "train": (f"exec {RK} train {D} m.model -C 3", {"m.model": ref.model_bytes}, ("m.model",),
                  same_as("m.model", ref.model3_bytes)),
        "predict": (f"exec {RK} predict {T} {M} s.txt", {"s.txt": b"0.5\n" * 10}, ("s.txt",), same_as("s.txt", ref.scores)),
        "path": (f"exec {RK} path --folds folds -C 0.01 -C 1 --out-dir out --table out/table.tsv",
                 {"folds": lambda d: (_folds(d), (d / "out").mkdir())}, None, None),
        "path --jobs 2": (f"exec {RK} path --folds folds --method grid --n-points 3 --jobs 2",
                          {"folds": lambda d: _folds(d)}, (), None),
        "train --kernel": (f"exec {RK} train {D} m.model -C 0.1 --kernel rbf --landmarks 12",
                           {"m.model": ref.model_bytes}, ("m.model",), same_as("m.model", ref.kernel_bytes)),
    }
    cases = []
    names = sorted(commands)
    for k in range(n):
        name = names[k % len(names)]
        script, files, outputs, check = commands[name]
        sig = SIGNALS[rng.randrange(len(SIGNALS))]
        delay = rng.uniform(0.0, durations.get(name, 3.0))
        if outputs is None:
            outputs = ("out/table.tsv", "out/Fold1.C0.01.model", "out/Fold1.C1.model", "out/Fold2.C0.01.model",
                       "out/Fold2.C1.model")
        cases.append(Case("signals", f"{name}: {sig} after {delay:.2f} s", script, dict(files), outputs, check_ok=check,
                          signal=(sig, delay)))
    return cases


def resources(ref: Ref, rng: random.Random) -> list[Case]:
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    M = q(ref.model)
    limits = sorted(set(LIMITS_MB) | {rng.randrange(400, 1600) for _ in range(6)} | {64, 2048})
    cases = []
    for mb in limits:
        pre = f"ulimit -v {mb << 10} && exec "
        files = {"m.model": ref.model3_bytes, "s.txt": b"previous\n", "scores.txt": ref.scores}
        for cmd, outs, check in [(f"train {D} m.model -C 0.01", ("m.model",), same_as("m.model", ref.model_bytes)),
                                 (f"predict {T} {M} s.txt", ("s.txt",), same_as("s.txt", ref.scores)),
                                 (f"eval {T} scores.txt", (), eval_is(ref.eval_out)),
                                 (f"train {D} m.model -C 0.1 --kernel rbf --landmarks 12", ("m.model",),
                                  same_as("m.model", ref.kernel_bytes)),
                                 (f"train /dev/zero m.model", (), None)]:
            cases.append(Case("memory", f"ulimit -v {mb} MB: {cmd}", pre + f"{RK} {cmd}", files, outs, check_ok=check,
                              must_fail=cmd.startswith("train /dev/zero")))
    # sizes that would cost more than the machine has
    for cmd in (f"train {D} m.model --solver factorized -K 100000000 --iterations 2",
                f"train {D} m.model --solver sgd --batch-size 10000000000",
                f"path {D} {q(SAMPLE_VALI)} --method grid --n-points 100000000",
                f"eval {T} scores.txt --permutations 100000000000"):
        cases.append(Case("memory", f"absurd size: {cmd}", f"exec {RK} {cmd}", {"scores.txt": ref.scores},
                          must_fail=True))
    # a landmark count above the documents is capped at them (as in the cli family): the size is not absurd
    cases.append(Case("memory", "landmarks 100000000", f"exec {RK} train {D} m.model -C 0.1 --kernel rbf --landmarks 100000000",
                      outputs=("m.model",)))
    return cases


def concurrency(ref: Ref, n: int) -> list[Case]:
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    Cs = ["0.01", "3"]
    cases = []
    for k in range(n):
        writers = 2 + k % 3
        jobs = " ".join(f"( {RK} train {D} m.model -C {Cs[j % 2]} 2>>err.log; echo rc=$? ) &" for j in range(writers))
        readers = f"( sleep 0.{k % 9}; {RK} predict {T} m.model r.txt 2>>err.log; echo rc=$? ) &" if k % 2 else ""

        def check(d, stdout):
            w = weights_of(d / "m.model")
            ok = any(np.array_equal(w, read_model_bytes(b)) for b in (ref.model_bytes, ref.model3_bytes))
            return None if ok else "the model is neither writer's"
        cases.append(Case("concurrency", f"{writers} trains of one model{' + a predict' if readers else ''} #{k}",
                          f"{jobs} {readers} wait", {"m.model": ref.model_bytes}, ("m.model", "r.txt", "err.log"),
                          check_ok=check, codes_on_stdout=True, stderr_line=False, runs=writers + bool(readers)))
    for k in range(max(1, n // 3)):
        jobs = " ".join(f"( {RK} predict {T} {q(ref.model)} s.txt; echo rc=$? ) &" for _ in range(3))
        cases.append(Case("concurrency", f"3 predicts into one scores file #{k}", f"{jobs} wait", {}, ("s.txt",),
                          check_ok=same_as("s.txt", ref.scores), codes_on_stdout=True, stderr_line=False, runs=3))
    return cases


_weights_cache: dict = {}


def read_model_bytes(b: bytes):
    key = hashlib.sha256(b).hexdigest()
    if key not in _weights_cache:
        with tempfile.NamedTemporaryFile(suffix=".model") as fh:
            fh.write(b)
            fh.flush()
            _weights_cache[key] = read_model(fh.name).weights
    return _weights_cache[key]


PY_PRELUDE = """
import sys, numpy as np, rankkit
from rankkit.errors import RankkitError, ResourceError
X, y, qid = rankkit.load_svmlight_file({train!r}, query_id=True)
try:
{body}
except (ResourceError, RankkitError, ValueError, TypeError, KeyError, OSError) as exc:
    # the exceptions a Python caller is promised; anything else is a traceback, exit 1
    msg = str(exc).splitlines()[0] if str(exc) else ''
    print('rankkit: error: ' + type(exc).__name__ + ': ' + msg, file=sys.stderr)
    sys.exit(3 if isinstance(exc, ResourceError) else 2)
"""

PY_MISUSE = [
    ("RankSVM(C=-1)", "rankkit.RankSVM(C=-1).fit(X, y, qid=qid)"),
    ("RankSVM(C=nan)", "rankkit.RankSVM(C=float('nan')).fit(X, y, qid=qid)"),
    ("RankSVM(C='1')", "rankkit.RankSVM(C='1').fit(X, y, qid=qid)"),
    ("fit without qid", "rankkit.RankSVM().fit(X, y)"),
    ("y too short", "rankkit.RankSVM().fit(X, y[:-1], qid=qid)"),
    ("qid too long", "rankkit.RankSVM().fit(X, y, qid=np.append(qid, 1))"),
    ("X None", "rankkit.RankSVM().fit(None, y, qid=qid)"),
    ("X a string", "rankkit.RankSVM().fit('data', y, qid=qid)"),
    ("X with nan", "Z = X.toarray(); Z[0, 0] = np.nan; rankkit.RankSVM().fit(Z, y, qid=qid)"),
    ("X with inf", "Z = X.toarray(); Z[0, 0] = np.inf; rankkit.RankSVM().fit(Z, y, qid=qid)"),
    ("y with nan", "yy = y.copy(); yy[0] = np.nan; rankkit.RankSVM().fit(X, yy, qid=qid)"),
    ("y of strings", "rankkit.RankSVM().fit(X, y.astype(str), qid=qid)"),
    ("X 3-d", "rankkit.RankSVM().fit(X.toarray()[:, :, None], y, qid=qid)"),
    ("X empty", "rankkit.RankSVM().fit(X[:0], y[:0], qid=qid[:0])"),
    ("X complex", "rankkit.RankSVM().fit(X.toarray() + 1j, y, qid=qid)"),
    ("X object dtype", "rankkit.RankSVM().fit(X.toarray().astype(object), y, qid=qid)"),
    ("qid floats", "rankkit.RankSVM().fit(X, y, qid=qid + 0.5)"),
    ("qid in two places", "qq = qid.copy(); qq[[0, -1]] = qq[[-1, 0]]; rankkit.RankSVM().fit(X, y, qid=qq)"),
    ("predict before fit", "rankkit.RankSVM().predict(X)"),
    ("predict wrong width", "m = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid); m.predict(X.toarray()[:, :3])"),
    ("predict nan", "m = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid); Z = X.toarray(); Z[1, 1] = np.nan; m.predict(Z)"),
    ("gamma without kernel", "rankkit.RankSVM(gamma=0.1).fit(X, y, qid=qid)"),
    ("landmarks without kernel", "rankkit.RankSVM(landmarks=5).fit(X, y, qid=qid)"),
    ("kernel nope", "rankkit.RankSVM(kernel='nope').fit(X, y, qid=qid)"),
    ("poly degree 1e6", "rankkit.RankSVM(kernel='poly', degree=1000000, landmarks=8).fit(X, y, qid=qid)"),
    ("solver nope", "rankkit.RankSVM(solver='nope').fit(X, y, qid=qid)"),
    ("loss nope", "rankkit.RankSVM(loss='nope').fit(X, y, qid=qid)"),
    ("tol -1", "rankkit.RankSVM(tol=-1).fit(X, y, qid=qid)"),
    ("max_iter 0", "rankkit.RankSVM(max_iter=0).fit(X, y, qid=qid)"),
    ("unknown parameter", "rankkit.RankSVM(nope=1)"),
    ("SGD batch 1e12", "rankkit.SGDRanker(batch_size=10**12).fit(X, y, qid=qid)"),
    ("SGD iterations 0", "rankkit.SGDRanker(iterations=0).fit(X, y, qid=qid)"),
    ("SGD learner nope", "rankkit.SGDRanker(learner='nope').fit(X, y, qid=qid)"),
    ("SGD alpha -1", "rankkit.SGDRanker(alpha=-1).fit(X, y, qid=qid)"),
    ("Factorized K 1e9", "rankkit.FactorizedRankSVM(K=10**9).fit(X, y, qid=qid)"),
    ("Factorized K 0", "rankkit.FactorizedRankSVM(K=0).fit(X, y, qid=qid)"),
    ("evaluate lengths", "rankkit.evaluate(y, np.zeros(3), qid=qid)"),
    ("evaluate nan scores", "rankkit.evaluate(y, np.full(y.size, np.nan), qid=qid)"),
    ("evaluate metric nope", "rankkit.evaluate(y, np.zeros(y.size), qid=qid, metrics=('nope',))"),
    ("evaluate ndcg@0", "rankkit.evaluate(y, np.zeros(y.size), qid=qid, metrics=('ndcg@0',))"),
    ("evaluate convention nope", "rankkit.evaluate(y, np.zeros(y.size), qid=qid, convention='nope')"),
    ("load /dev/zero", "rankkit.load_svmlight_file('/dev/zero')"),
    ("load a directory", "rankkit.load_svmlight_file('/')"),
    ("load missing", "rankkit.load_svmlight_file('/nonexistent/x.txt')"),
    ("load n_features too small", "rankkit.load_svmlight_file({train!r}, n_features=2)"),
    ("load n_features -1", "rankkit.load_svmlight_file({train!r}, n_features=-1)"),
    ("regularization_path n_points 1e9", "rankkit.regularization_path(X, y, X, y, qid=qid, qid_valid=qid, method='grid', n_points=10**9)"),
    ("regularization_path method nope", "rankkit.regularization_path(X, y, X, y, qid=qid, qid_valid=qid, method='nope')"),
    ("eval_set wrong width", "rankkit.RankSVM(C=0.01).fit(X, y, qid=qid, eval_set=[(X[:, :3], y)], eval_qid=[qid])"),
    ("patience without eval_set", "rankkit.RankSVM(patience=3).fit(X, y, qid=qid)"),
    ("save to a directory", "m = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid); m.save('/')"),
    ("save over the data", "m = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid); m.save({train!r})"),
    ("load a data file as a model", "rankkit.load_model({train!r})"),
    ("n_jobs 0", "rankkit.RankSVM(n_jobs=0).fit(X, y, qid=qid)"),
    ("load_model of a directory", "rankkit.load_model('/')"),
    ("load_model format nope", "rankkit.load_model({model!r}, model_format='nope')"),
    ("set_params bad", "rankkit.RankSVM().set_params(C=-3).fit(X, y, qid=qid)"),
]


# accepted as scikit-learn accepts them: numeric strings and objects as numbers, a query's rows
# gathered wherever they are, a NaN to predict (a NaN score, as the model says)
MAY_SUCCEED = ("predict nan", "y of strings", "X object dtype", "qid in two places")


def python_misuse(ref: Ref, scratch: Path) -> list[Case]:
    cases = []
    train = str(scratch / "py-train.txt")
    shutil.copy(SAMPLE_TRAIN, train)
    for label, body in PY_MISUSE:
        code = PY_PRELUDE.format(train=train, body="    " + body.format(train=train, model=str(ref.model)))
        cases.append(Case("python", label, f"exec {shlex.quote(PY)} -W ignore -c {shlex.quote(code)}",
                          must_fail=label not in MAY_SUCCEED))
    return cases


# -- shared directories and short writes (issue 35: items 1, 3, 4, 5, 10) ------------------------------
def _nobody() -> tuple[int, int] | None:
    """uid and gid of user nobody, when this trial runs as root (planting as another user)."""
    try:
        import pwd

        pw = pwd.getpwnam("nobody")
    except (ImportError, KeyError):
        return None
    return (pw.pw_uid, pw.pw_gid) if os.geteuid() == 0 else None


def _planted(kind: str, name: str, target: str = "notes.txt"):
    """A setup: `shr/`, sticky and world-writable, holding `name` planted by nobody (a link to
    `target`, relative to the case directory, or a FIFO or socket); `notes.txt` a 0600 root file and
    `precious/` a directory, both of which must stay untouched."""
    def make(d: Path):
        uid, gid = _nobody()
        (d / "notes.txt").write_bytes(b"root's notes\n")
        os.chmod(d / "notes.txt", 0o600)
        (d / "precious").mkdir()
        (d / "precious" / "keep.txt").write_bytes(b"keep\n")
        shr = d / "shr"
        shr.mkdir()
        os.chmod(shr, 0o1777)
        where = shr / name
        if kind == "link":
            os.symlink(target if target.startswith("/") else str(d / target), where)
        elif kind == "fifo":
            os.mkfifo(where, 0o666)
        else:
            import socket

            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(where))
            sock.close()
        os.lchown(where, uid, gid)  # as if nobody had made it (the pytest twin plants it as nobody)
    return make


def shared_directories(ref: Ref) -> list[Case]:
    """Links, FIFOs and sockets planted by another user in a sticky world-writable directory, for
    every output; what the rule allows; FIFOs nobody reads; empty and 255-byte output names."""
    D, V, T = q(SAMPLE_TRAIN), q(SAMPLE_VALI), q(SAMPLE_TEST)
    M = q(ref.model)
    F = "folds"
    folds = {"folds": lambda d: _folds(d)}
    cases = []
    if _nobody() is not None:
        outputs = {
            "predict OUT": f"predict {T} {M} OUT", "predict --format trec OUT": f"predict {T} {M} OUT --format trec",
            "predict --format ranked OUT": f"predict {T} {M} OUT --format ranked",
            "train MODEL": f"train {D} OUT -C 0.01",
            "train --save-factors": f"train {D} f.model --solver factorized -K 2 --iterations 200 --save-factors OUT",
            "path --table": f"path {D} {V} --n-points 3 --table OUT", "path --plot": f"path {D} {V} --n-points 3 --plot OUT",
            "path --out-model": f"path {D} {V} --n-points 3 --out-model OUT",
            "path --folds --table": f"path --folds {F} -C 0.1 --out-dir mdir --table OUT",
            "convert OUT": f"convert {M} OUT --to svm_rank",
        }
        for label, cmd in outputs.items():
            for kind in ("link", "fifo"):
                cases.append(Case("shared dirs", f"{kind} of nobody: {label}", f"exec {RK} {cmd.replace('OUT', 'shr/o')}",
                                  {"setup": _planted(kind, "o"), **folds}, must_fail=True))
        for label, cmd in [("experiment --out-dir", f"experiment {F} --out-dir shr/d --n-points 2 -m map"),
                           ("experiment --out-dir below", f"experiment {F} --out-dir shr/d/sub --n-points 2 -m map"),
                           ("path --folds --out-dir", f"path --folds {F} -C 0.1 --out-dir shr/d"),
                           ("a parent of MODEL", f"train {D} shr/d/m.model -C 0.01"),
                           ("a parent of OUT", f"predict {T} {M} shr/d/s.txt")]:
            cases.append(Case("shared dirs", f"link to a directory: {label}", f"exec {RK} {cmd}",
                              {"setup": _planted("link", "d", "precious"), **folds}, must_fail=True))
        for label, target in (("a device", "/dev/null"), ("a chain", "shr/o2")):
            cases.append(Case("shared dirs", f"link to {label}", f"exec {RK} predict {T} {M} shr/o",
                              {"setup": _planted("link", "o", target)}, must_fail=True))
        cases.append(Case("shared dirs", "socket of nobody", f"exec {RK} predict {T} {M} shr/o",
                          {"setup": _planted("socket", "o")}, must_fail=True))
        save = f"import rankkit; m = rankkit.load_model({str(ref.model)!r}); m.save('shr/o')"
        for kind in ("link", "fifo"):
            cases.append(Case("shared dirs", f"Python save() into a {kind} of nobody",
                              f"exec {shlex.quote(PY)} -c {shlex.quote(PY_ONE_LINE.format(body=save))}",
                              {"setup": _planted(kind, "o")}, must_fail=True))

        def own_link(d: Path):
            shr = d / "shr"
            shr.mkdir()
            os.chmod(shr, 0o1777)
            os.symlink(str(d / "s.txt"), shr / "o")
        cases.append(Case("shared dirs", "own link in a shared directory", f"exec {RK} predict {T} {M} shr/o",
                          {"setup": own_link}, ("s.txt",), check_ok=same_as("s.txt", ref.scores)))
    wait = f"; rc=$?; wait; exit $rc"
    cases += [
        Case("shared dirs", "own FIFO with a reader", f"mkfifo p; cat p > got.txt & {RK} predict {T} {M} p{wait}",
             outputs=("got.txt",), check_ok=same_as("got.txt", ref.scores)),
        Case("shared dirs", "own FIFO nobody reads", f"mkfifo p; exec {RK} predict {T} {M} p", must_fail=True),
        Case("shared dirs", "/dev/stdout", f"exec {RK} predict {T} {M} /dev/stdout", check_ok=stdout_is(ref.scores)),
        Case("shared dirs", "process substitution", f"exec {RK} predict {T} {M} >(cat)", check_ok=stdout_is(ref.scores)),
        Case("shared dirs", "/dev/fd/N", f"exec {RK} predict {T} {M} /dev/fd/5 5>s.txt", outputs=("s.txt",),
             check_ok=same_as("s.txt", ref.scores)),
        Case("shared dirs", "FIFO as an experiment record",
             f"mkdir -p out/Fold1; mkfifo out/Fold1/newton.done.json; exec {RK} experiment {F} --out-dir out "
             "--n-points 2 -m map", {**folds}, must_fail=True),
    ]
    keep = {"results.txt": b"mine\n", **folds}
    for label, cmd in [("experiment --out-dir ''", f"experiment {F} --out-dir '' --n-points 2 -m map"),
                       ("path --folds --out-dir ''", f"path --folds {F} -C 0.1 --out-dir ''"),
                       ("predict OUT ''", f"predict {T} {M} ''")]:
        cases.append(Case("shared dirs", label, f"exec {RK} {cmd}", keep, must_fail=True))
    code = "import rankkit; rankkit.experiment('folds', metrics=('map',), n_points=2, out_dir='')"
    cases.append(Case("shared dirs", "Python experiment(out_dir='')",
                      f"exec {shlex.quote(PY)} -c {shlex.quote(PY_ONE_LINE.format(body=code))}", keep, must_fail=True))
    for n in (228, 240, 254, 255):
        name = "s" * (n - 4) + ".txt"
        cases.append(Case("shared dirs", f"a {n}-byte OUT", f"exec {RK} predict {T} {M} {name}", outputs=(name,),
                          check_ok=same_as(name, ref.scores)))
    wide = "é" * 127 + "x"  # 255 bytes of UTF-8
    cases.append(Case("shared dirs", "a 255-byte OUT of two-byte characters", f"exec {RK} predict {T} {M} {wide}",
                      outputs=(wide,), check_ok=same_as(wide, ref.scores)))
    cases.append(Case("shared dirs", "a 255-byte MODEL", f"exec {RK} train {D} {'m' * 249}.model -C 0.01",
                      outputs=("m" * 249 + ".model",), check_ok=same_as("m" * 249 + ".model", ref.model_bytes)))
    return cases


# a Python face case: a UsageError is one line and exit 2 (as the CLI words it)
PY_ONE_LINE = ("import sys\nfrom rankkit.errors import RankkitError\ntry:\n    {body}\n"
               "except RankkitError as e:\n    print('rankkit: error:', e, file=sys.stderr); sys.exit(2)\n")


def short_writes(ref: Ref) -> list[Case]:
    """Every command's stdout into a file that fills up part way (RLIMIT_FSIZE at 10%, 50% and 90% of
    the output, and a 64 KB tmpfs in a private mount namespace): exit 2 in one line, never exit 0
    with part of the output."""
    T = q(SAMPLE_TEST)
    M, S = q(ref.model), q(ref.base / "s.txt")
    commands = [f"predict {T} {M}", f"predict {T} {M} --format trec", f"predict {T} {M} --format ranked",
                f"eval {T} {S}", f"eval {T} {S} --per-query", f"eval {T} {S} --format json --per-query",
                f"eval {T} {S} --format tsv --per-query", f"convert {M} - --to svm_rank"]
    cases = []
    for cmd in commands:
        full = subprocess.run([BASH, "-c", f"{RK} {cmd}"], cwd=ref.base, env=ref.env, capture_output=True, timeout=300)
        size = len(full.stdout)
        for frac in (0.1, 0.5, 0.9):
            n = max(1, int(size * frac))
            wrapper = f"{shlex.quote(PY)} -c {shlex.quote(FSIZE.format(n=n))}"
            cases.append(Case("short writes", f"stdout > file, {n} of {size} bytes: {cmd}", f"{wrapper} {cmd} > out.txt",
                              outputs=("out.txt",), must_fail=True))
    unshare = shutil.which("unshare")
    if unshare and os.geteuid() == 0:
        big = lambda d: (d / "big.txt").write_bytes(  # noqa: E731 - ~5x the sample: > 64 KB of output
            b"".join(SAMPLE_TEST.read_bytes().replace(b"qid:", f"qid:{k}0".encode()) for k in range(1, 6)))
        for cmd in (f"predict big.txt {M} --format trec", f"predict big.txt {M} --format ranked",
                    f"predict big.txt {M} mnt/s.txt --format trec"):
            redirect = "" if "mnt/" in cmd else " > mnt/s.txt"
            script = (f"mkdir mnt && exec {unshare} -m {BASH} -c "
                      + shlex.quote(f"mount -t tmpfs -o size=64k tmpfs mnt && exec {RK} {cmd}{redirect}"))
            cases.append(Case("short writes", f"64 KB tmpfs: {cmd}{redirect}", script, {"big": big}, must_fail=True))
    return cases


# -- the trial -----------------------------------------------------------------------------------------
# -- issue 35 (items 6, 7, 8): experiment's inputs, output directory and resume records ------------------
def _letor_dir(names=("Fold1", "Fold2"), bad=None):
    """A LETOR directory `L` of the sample's files; bad = (fold, part, line appended)."""
    def make(d: Path):
        for fold in names:
            f = d / "L" / fold
            f.mkdir(parents=True, exist_ok=True)
            for part, src in (("train", SAMPLE_TRAIN), ("vali", SAMPLE_VALI), ("test", SAMPLE_TEST)):
                shutil.copy(src, f / f"{part}.txt")
        if bad is not None:
            with open(d / "L" / bad[0] / f"{bad[1]}.txt", "ab") as fh:
                fh.write(bad[2])
    return make


def _unshare(mount: str, command: str) -> str:
    """`command` with ./mnt a tmpfs mounted with `mount` options, in a private mount namespace; a
    machine without unshare -rm runs it unchanged on ./mnt, a plain directory (the case still holds)."""
    inner = f"mount -t tmpfs -o {mount} tmpfs mnt 2>/dev/null || exit 97; {command}"
    return (f"mkdir -p mnt; if unshare -rm true 2>/dev/null; then exec unshare -rm {shlex.quote(BASH)} -c "
            f"{shlex.quote(inner)}; else {command}; fi")


def experiment_inputs(ref: Ref) -> list[Case]:
    """Nothing created before every input is read; one line for an output directory that cannot be
    written and for odd fold names; records that name the data read and are verified."""
    D, V, T = q(SAMPLE_TRAIN), q(SAMPLE_VALI), q(SAMPLE_TEST)
    EXP = f"{RK} experiment"
    fast = "--n-points 2 -m map"
    nothing = "; rc=$?; if [ -e O ]; then echo 'rankkit: trial: O was created' >&2; exit 9; fi; exit $rc"
    cases = []
    for fold, part, line in [("Fold2", "test", b"1 qid:9 1:x\n"), ("Fold2", "train", b"1 qid:9 1:nan\n"),
                             ("Fold2", "vali", b"x qid:9 1:1\n"), ("Fold3", "test", b"1 qid:9 0:1\n"),
                             ("Fold3", "train", b"\x00\n")]:
        files = {"L": _letor_dir(("Fold1", "Fold2", "Fold3"), (fold, part, line))}
        for cmd in (f"{EXP} L --out-dir O {fast}", f"{EXP} L --out-dir O/deep {fast} --jobs 2",
                    f"{RK} path --folds L -C 1 --out-dir O", f"{RK} path --folds L -C 1 -C 2 --out-dir O --jobs 2"):
            cases.append(Case("experiment inputs", f"bad {fold}/{part}.txt: {cmd.split(None, 3)[3][:40]}",
                              cmd + nothing, files, must_fail=True))
    for name, setup in [("dangling --out-dir link", "ln -s nowhere O"),
                        ("O/Fold1 a regular file", "mkdir O && echo keep > O/Fold1"),
                        ("O/Fold1 a dangling link", "mkdir O && ln -s nowhere O/Fold1"),
                        ("parent of O a file", "echo keep > P"),
                        ("parent of O a dangling link", "ln -s nowhere P")]:
        out = "P/O" if "parent" in name else "O"
        for cmd in (f"{EXP} --fold {D} {V} {T} --out-dir {out} {fast}", f"{EXP} L --out-dir {out} {fast}",
                    f"{RK} path --folds L -C 1 --out-dir {out}"):
            fine = cmd.startswith(f"{RK} path") and "O/Fold1" in name  # path writes O/Fold1.C1.model, not O/Fold1/
            cases.append(Case("experiment inputs", f"{name}: {cmd.split()[3]}", f"{setup}; exec {cmd}",
                              {"L": _letor_dir()}, outputs=("O/Fold1.C1.model",) if fine else (), must_fail=not fine))
    for out, must in (("/dev/null", True), ("/dev/null/O", True), ("/proc/1/cwd/../O", True), ("/proc/self/O", True),
                      ("lk/../O", False)):
        cmd = f"mkdir -p real/sub && ln -s real/sub lk; exec {EXP} --fold {D} {V} {T} --out-dir {out} {fast}"
        cases.append(Case("experiment inputs", f"--out-dir {out}", cmd, outputs=(), must_fail=must,
                          check_ok=None if must else (lambda d, out: None if (d / "real" / "O" / "results.json").is_file()
                                                      else "real/O/results.json not written")))
    for size in ("ro,size=1m", "size=4k", "size=12k", "size=24k", "size=36k"):
        for cmd in (f"{EXP} --fold {D} {V} {T} --out-dir mnt/O {fast}", f"{RK} path --folds L -C 1 --out-dir mnt/O"):
            cases.append(Case("experiment inputs", f"tmpfs {size}: {cmd.split()[3]}", _unshare(size, cmd),
                              {"L": _letor_dir()}, must_fail=size.startswith("ro")))
    for name in ("Fold²", "Fold١", "Fold𝟚", "Fold٣"):
        for cmd in (f"{EXP} L {fast}", f"{RK} path --folds L", f"{RK} path --folds L -C 1 --out-dir O"):
            cases.append(Case("experiment inputs", f"{name}: {cmd.split()[3]}", f"exec {cmd}" + nothing,
                              {"L": _letor_dir(("Fold1", name))}, must_fail=True))
    cases.append(Case("experiment inputs", "Fold01 and Fold1", f"exec {EXP} L {fast}",
                      {"L": _letor_dir(("Fold01", "Fold1"))}))
    cases.append(Case("experiment inputs", "Fold1 a regular file", f"echo x > L/Fold3; exec {EXP} L {fast}",
                      {"L": _letor_dir(("Fold1", "Fold2"))}, must_fail=True))
    cases.append(Case("experiment inputs", "--fold - once", f"exec {EXP} --fold - {V} {T} {fast}",
                      stdin=SAMPLE_TRAIN.read_bytes()))
    cases.append(Case("experiment inputs", "--fold - twice", f"exec {EXP} --fold - - {T} {fast}" + nothing,
                      stdin=SAMPLE_TRAIN.read_bytes(), must_fail=True))
    cases.append(Case("experiment inputs", "--fold /dev/stdin twice", f"exec {EXP} --fold /dev/stdin /dev/stdin {T} "
                      f"{fast}", stdin=SAMPLE_TRAIN.read_bytes(), must_fail=True))
    # resume: a pipe resumed with other data is fitted again, and says what a fresh run says
    figures = "grep -E '^(Fold1|mean)'"
    fail = "{ echo 'rankkit: trial: %s' >&2; exit 9; }"
    resume = (f"cat {D} | {EXP} --fold /dev/stdin {V} {T} --out-dir O {fast} -v > a.txt 2>/dev/null || exit $?; "
              f"head -300 {D} > h.txt; head -300 {D} | {EXP} --fold /dev/stdin {V} {T} --out-dir O {fast} -v > b.txt "
              f"2> b.err || exit $?; {EXP} --fold h.txt {V} {T} {fast} > c.txt || exit $?; "
              f"grep -q reusing b.err && {fail % 'reused another run'}; "
              f"diff <({figures} b.txt) <({figures} c.txt) >/dev/null || {fail % 'not the figures of a fresh run'}")
    cases.append(Case("experiment inputs", "resume from a pipe with other data", resume, stdin=None))
    for name, edit, why in [
            ("test map", "import json,sys; p=sys.argv[1]; r=json.load(open(p)); r['test']['map']=0.999; "
                         "json.dump(r, open(p,'w'))", "checksum"),
            ("chosen C", "import json,sys; p=sys.argv[1]; r=json.load(open(p)); r['chosen']={'C': 1e3}; "
                         "json.dump(r, open(p,'w'))", "checksum"),
            ("checksum removed", "import json,sys; p=sys.argv[1]; r=json.load(open(p)); del r['checksum']; "
                                 "json.dump(r, open(p,'w'))", "checksum"),
            ("cut", "import sys; p=sys.argv[1]; b=open(p,'rb').read(); open(p,'wb').write(b[:len(b)//2])", "damaged"),
            ("scores edited", "import sys; p=sys.argv[1].replace('done.json','test.scores'); "
                              "t=open(p).read(); open(p,'w').write(t.replace(chr(10), '1'+chr(10), 1))", "scores")]:
        script = (f"{EXP} --fold {D} {V} {T} --out-dir O {fast} > a.txt 2>/dev/null || exit $?; "
                  f"{shlex.quote(PY)} -c {shlex.quote(edit)} O/Fold1/newton.done.json || exit 8; "
                  f"{EXP} --fold {D} {V} {T} --out-dir O {fast} > b.txt 2> b.err || exit $?; "
                  f"cmp -s a.txt b.txt || {fail % 'figures differ from the first run'}; "
                  f"[ $(grep -c 'fitted again' b.err) = 1 ] && grep -q {why} b.err || {fail % 'not said in one line'}")
        cases.append(Case("experiment inputs", f"edited record: {name}", script))
    return cases


# -- issue 35 (item 11): a model reader stops at a wrong first line --------------------------------------
def model_heads(ref: Ref) -> list[Case]:
    """A large data file (or blank lines) given as MODEL is refused at its first block: one line,
    exit 2, within 300 MB (measured by /usr/bin/time when present)."""
    T = q(SAMPLE_TEST)
    timer = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    line = SAMPLE_TRAIN.read_bytes().splitlines()[0].decode()
    cases = []
    for source, what in [(f"yes {shlex.quote(line)} | head -c 400000000", "400 MB of LETOR lines"),
                         ("yes '' | head -c 400000000", "400 MB of blank lines"),
                         (f"{{ echo 'rankkit-model 2'; yes {shlex.quote(line)} | head -c 100000000; }}",
                          "a rankkit first line, then 100 MB of data")]:
        for fmt in ("", " --model-format liblinear", " --model-format sofia-ml", " --model-format svm_rank"):
            if "rankkit first line" in what and fmt:
                continue
            cmd = f"{RK} predict {T} - s.txt{fmt}"
            if timer:
                script = (f"{source} | {timer} -o mem.txt -f %M {cmd}; rc=$?; kb=$(tail -1 mem.txt); "
                          f"if [ \"$kb\" -gt 300000 ] && [ \"{what[-4:]}\" != data ]; then "
                          f"echo \"rankkit: trial: $kb KB\" >&2; exit 9; fi; exit $rc")
            else:
                script = f"{source} | exec {cmd}"
            cases.append(Case("model heads", f"{what}{fmt or ' (auto)'}", script, must_fail=True, stdin=None))
    return cases


_trial_env: dict = {}



# -- issue 35: another user's kernel cache, environment values, resource limits, interrupted workers ------
class _Planted:
    """Unpickling this touches a marker file: what a pickle planted in a shared kernel cache would run."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(self.marker)}",))


def cache_attack(ref: Ref, scratch: Path) -> list[Case]:
    """Another user (nobody) fills a shared, sticky world-writable kernel cache with pickles that
    touch a marker; root's runs (default settings, RANKKIT_AOT=0, train, predict) must never run
    them, must succeed with the reference output and say so in one line. And a .numba_config.yaml
    planted in the working directory must not choose where root writes. Runs only as root with a
    `nobody` user (the files must belong to another user)."""
    import pickle
    import pwd

    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return []
    if os.geteuid() != 0:
        return []
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    M = q(ref.model)
    # the layout of a filled JIT cache (where each index file goes), from one run of each command
    layout = scratch / "attack-layout"
    for cmd in (f"train {D} lay.model -C 0.01", f"predict {T} {M} lay.txt"):
        subprocess.run([BASH, "-c", f"{RK} {cmd}"], cwd=scratch, capture_output=True, timeout=900,
                       env=dict(_trial_env or _env(), NUMBA_CACHE_DIR=str(layout), RANKKIT_AOT="0"))
    indexes = [p.relative_to(layout) for p in layout.rglob("*.nbi")]
    shared_top = Path(tempfile.mkdtemp(prefix="rankkit-trial-shared-"))  # nobody must reach it: not in scratch
    os.chmod(shared_top, 0o755)

    def plant(name: str):
        def make(d: Path):
            shared = shared_top / f"{d.name}-{name}"
            shared.mkdir()
            os.chmod(shared, 0o1777)
            evil = pickle.dumps(_Planted(str(d / "PLANTED-PICKLE-RAN")))
            for rel in indexes:
                subprocess.run(["sh", "-c", 'mkdir -p "$1" && chmod 777 "$1" && cat > "$1/$2" && chmod 666 "$1/$2"',
                                "sh", str(shared / rel.parent), rel.name], input=evil, user="nobody", check=True,
                               capture_output=True, timeout=60)
            (d / "shared").symlink_to(shared)
            (d / "tmp").mkdir()
            private = d / "tmp" / f"rankkit-numba-cache-{os.getuid()}"  # an earlier run's private cache
            shutil.copytree(layout, private, ignore=shutil.ignore_patterns("rankkit-aot"))
            os.chmod(private, 0o700)
        return make

    def no_marker(d: Path, stdout: bytes):
        return "a pickle planted by another user ran" if (d / "PLANTED-PICKLE-RAN").exists() else None

    cases = []
    for aot in ("1", "0"):
        for label, script, outs, check in [
                ("predict", f"NUMBA_CACHE_DIR=$(readlink -f shared) TMPDIR=$PWD/tmp exec {RK} predict {T} {M}", (),
                 both(no_marker, stdout_is(ref.scores))),
                ("train", f"NUMBA_CACHE_DIR=$(readlink -f shared) TMPDIR=$PWD/tmp exec {RK} train {D} m.model -C 0.01",
                 ("m.model",), both(no_marker, same_as("m.model", ref.model_bytes)))]:
            cases.append(Case("cache attack", f"{label}: pickles planted by nobody, RANKKIT_AOT={aot}", script,
                              {"shared": plant(f"{label}{aot}")}, outs, check_ok=check, env={"RANKKIT_AOT": aot}))

    def yaml_file(d: Path):
        (d / ".numba_config.yaml").write_text(f"chrome_trace: {d / 'TRACE.json'}\ncache_dir: {d / 'c'}\n")

    def no_trace(d: Path, out: bytes):
        if (d / "TRACE.json").exists() or (d / "c").exists():
            return ".numba_config.yaml in the working directory chose where the run wrote"
        return None if out == ref.scores else "wrong scores on stdout"

    for aot in ("1", "0"):
        cases.append(Case("cache attack", f"predict: .numba_config.yaml in the working directory, RANKKIT_AOT={aot}",
                          f"exec {RK} predict {T} {M}", {".numba_config.yaml": yaml_file}, check_ok=no_trace,
                          env={"RANKKIT_AOT": aot}))
    return cases


def environment_values(ref: Ref) -> list[Case]:
    """Values numba or rankkit cannot use: exit 2 in one line naming the variable (numba's warning
    with a traceback on every run, an abort inside LLVM, an OverflowError before); values they can
    use: the undisturbed result."""
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    bad = {"NUMBA_OPT": ["garbage", "4", ""], "NUMBA_DEBUG": ["x"], "NUMBA_LOOP_VECTORIZE": ["x", "1.0"],
           "NUMBA_SLP_VECTORIZE": ["yes"], "NUMBA_DISABLE_JIT": ["true"], "NUMBA_BOUNDSCHECK": ["on"],
           "NUMBA_CPU_NAME": ["garbage"], "NUMBA_CPU_FEATURES": ["garbage", "+nosuchfeature"],
           "NUMBA_NUM_THREADS": ["abc", "0"], "NUMBA_FUNCTION_CACHE_SIZE": ["big"], "NUMBA_DUMP_IR": ["x"],
           "NUMBA_CUDA_DEFAULT_PTX_CC": ["x"], "NUMBA_CUDA_MAX_PENDING_DEALLOCS_RATIO": ["half"],
           "RANKKIT_MEMORY_LIMIT": ["inf", "1e400", "-1", "0", "abc", "nan"]}
    good = {"NUMBA_OPT": ["3", "max"], "NUMBA_DEBUG": ["0"], "NUMBA_BOUNDSCHECK": ["0"],
            "RANKKIT_MEMORY_LIMIT": ["1e12", "", "8000000000"]}
    files = {"scores.txt": ref.scores, "m.model": ref.model3_bytes}
    cases = []
    for name, values in bad.items():
        for value in values:
            for cmd, outs in ((f"train {D} m.model -C 0.01", ("m.model",)), (f"eval {T} scores.txt", ())):
                cases.append(Case("environment values", f"{cmd.split()[0]}: {name}={value!r}", f"exec {RK} {cmd}",
                                  files, must_fail=True, env={name: value}))
    for name, values in good.items():
        for value in values:
            cases.append(Case("environment values", f"train: {name}={value!r}", f"exec {RK} train {D} m.model -C 0.01",
                              files, ("m.model",), check_ok=same_as("m.model", ref.model_bytes), env={name: value}))
    return cases


_NO_THREADS = ("import threading, runpy\n"
               "def _refused(self, *a, **k):\n"
               "    raise RuntimeError(\"can't start new thread\")\n"
               "threading.Thread.start = _refused\n"
               "runpy.run_module('rankkit', run_name='__main__', alter_sys=True)")


def resource_limits(ref: Ref) -> list[Case]:
    """Few file descriptors (ulimit -n), and threads the system refuses (ulimit -u: only for a user
    other than root, whom the kernel exempts; for root the refusal is simulated as Python reports it):
    a result, or one line with exit 2 or 3, never an internal error."""
    D, T = q(SAMPLE_TRAIN), q(SAMPLE_TEST)
    M = q(ref.model)
    files = {"folds": lambda d: _folds(d), "m.model": ref.model3_bytes, "scores.txt": ref.scores}
    commands = [(f"path --folds folds --method grid --n-points 3 --jobs 2", ()),
                (f"path --folds folds --method grid --n-points 3", ()),
                (f"train {D} m.model -C 0.01", ("m.model",)), (f"predict {T} {M} s.txt", ("s.txt",)),
                (f"eval {T} scores.txt", ())]
    checks = {"train": same_as("m.model", ref.model_bytes), "predict": same_as("s.txt", ref.scores),
              "eval": eval_is(ref.eval_out)}
    cases = []
    for n in (8, 12, 16, 20, 24, 32):
        for cmd, outs in commands:
            cases.append(Case("resource limits", f"ulimit -n {n}: {cmd}", f"ulimit -n {n} && exec {RK} {cmd}", files,
                              outs, check_ok=checks.get(cmd.split()[0])))
    if os.geteuid() != 0:
        for n in (20, 40, 80):
            for cmd, outs in commands:
                cases.append(Case("resource limits", f"ulimit -u {n}: {cmd}", f"ulimit -u {n} && exec {RK} {cmd}",
                                  files, outs, check_ok=checks.get(cmd.split()[0])))
    for cmd, outs in commands:
        cases.append(Case("resource limits", f"no thread can start: {cmd}",
                          f"exec {shlex.quote(PY)} -c {shlex.quote(_NO_THREADS)} {cmd}", files, outs,
                          check_ok=checks.get(cmd.split()[0])))
    return cases


def interrupted_workers(ref: Ref, rng: random.Random) -> list[Case]:
    """A Ctrl-C or timeout's signal reaches the whole process group, the worker processes too
    (--dask local:2, path --jobs 2): one line `rankkit: interrupted by SIG...`, 128 + N, at any moment."""
    T = q(SAMPLE_TEST)
    M = q(ref.model)
    # the rankkit command as installed (what an operator runs), else python -m rankkit
    script = Path(PY).with_name("rankkit")
    rk = shlex.quote(str(script)) if script.is_file() else RK
    commands = {"path --jobs 2": (f"path --folds folds --method grid --n-points 5 --jobs 2", ())}
    try:
        import distributed  # noqa: F401

        commands["predict --dask local:2"] = (f"predict {T} {M} s.txt --dask local:2", ("s.txt",))
    except ImportError:
        pass
    cases = []
    for name, (cmd, outs) in sorted(commands.items()):
        for sig in ("INT", "TERM"):
            for delay in (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, round(rng.uniform(0.3, 6.0), 2)):
                # job control: the command in its own process group, SIGINT not ignored as for a plain `&`;
                # bash's own stderr (its job notices) away, the command's kept
                body = (f"exec 3>&2 2>/dev/null; set -m; {rk} {cmd} 2>&3 & p=$!; sleep {delay}; "
                        f"kill -{sig} -- -$p || kill -{sig} $p; wait $p")
                cases.append(Case("interrupted workers", f"{name}: SIG{sig} to the group after {delay} s", body,
                                  {"folds": lambda d: _folds(d)}, outs, allow=(0, 2, 3, 130, 143)))
    return cases


def main(argv=None) -> int:
    global _trial_env
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--cases", type=int, default=260,
                    help="mutated data files (3 runs each); half as many mutated model files [260: ~1,900 runs in all]")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a few cases of each family (well under a minute)")
    ap.add_argument("--keep", default=None, help="directory for the case directories (default: a temporary one)")
    ap.add_argument("--family", action="append", default=None, help="only these families (repeatable, prefix)")
    args = ap.parse_args(argv)
    # a trial started in the background (`nohup ... &`) has SIGINT and SIGHUP ignored, and a signal
    # ignored when rankkit starts stays ignored: give the runs the defaults, or the signal cases
    # would only ever test SIGTERM
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    rng = random.Random(args.seed)
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="rankkit-trial-"))
    scratch.mkdir(parents=True, exist_ok=True)
    env = _env()
    env.pop("RANKKIT_DEBUG", None)
    _trial_env = env
    started = time.monotonic()
    print(f"operator trial: seed {args.seed}, cases {args.cases}, jobs {args.jobs}{', quick' if args.quick else ''}, "
          f"in {scratch}", flush=True)
    ref = Ref(scratch / "ref", env)
    durations = {}
    for name, cmd in [("train", f"{RK} train {q(SAMPLE_TRAIN)} timing.model -C 3"),
                      ("predict", f"{RK} predict {q(SAMPLE_TEST)} {q(ref.model)} timing.txt")]:
        t = time.monotonic()
        subprocess.run([BASH, "-c", cmd], cwd=ref.base, env=env, capture_output=True)
        durations[name] = time.monotonic() - t
    durations["path"] = durations["train"] * 3
    durations["path --jobs 2"] = durations["train"] * 4
    durations["train --kernel"] = durations["train"] * 1.5
    n_mut = 6 if args.quick else args.cases
    families = [
        mutated_data(ref, n_mut, rng),
        mutated_models(ref, n_mut if args.quick else args.cases // 2, rng),
        bad_inputs(ref), bad_models(ref), cli_misuse(ref), environment(ref, scratch), full_disk(ref), streams(ref),
        signals(ref, 5 if args.quick else 120, rng, durations), resources(ref, rng),
        concurrency(ref, 2 if args.quick else 24), python_misuse(ref, scratch),
        experiment_inputs(ref), model_heads(ref), shared_directories(ref), short_writes(ref),
        cache_attack(ref, scratch), environment_values(ref), resource_limits(ref), interrupted_workers(ref, rng),
    ]
    cases = [c for fam in families for c in fam]
    if args.family:
        cases = [c for c in cases if any(c.family.startswith(f) for f in args.family)]
    if args.quick:  # a few of each family
        seen = collections.Counter()
        quick = []
        for c in cases:
            seen[c.family] += 1
            if seen[c.family] <= 4:
                quick.append(c)
        cases = quick
    results = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_case, c, scratch / "cases" / f"{i:05d}", env): c for i, c in enumerate(cases)}
        for done, fut in enumerate(as_completed(futures), 1):
            try:
                results.append(fut.result())
            except Exception as exc:  # noqa: BLE001 - a harness error is reported as the case's failure
                results.append(Outcome(futures[fut], "harness", [f"harness error: {type(exc).__name__}: {exc}"], 0.0))
            if results[-1].problems:
                r = results[-1]
                print(f"  FAILED [{r.case.family}] {r.case.name}: exit {r.code}: {'; '.join(r.problems)[:400]}", flush=True)
            if done % 100 == 0 or done == len(cases):
                bad = sum(1 for r in results if r.problems)
                print(f"  {done}/{len(cases)} cases, {bad} failed, {time.monotonic() - started:.0f} s", flush=True)
    report(results, time.monotonic() - started, args, scratch)
    if not args.keep:
        _rmtree(scratch)
    return 1 if any(r.problems for r in results) else 0


def _rmtree(path: Path) -> None:
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            try:
                os.chmod(os.path.join(root, d), 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


def report(results: list, seconds: float, args, scratch: Path) -> None:
    fams = collections.OrderedDict()
    for r in results:
        fams.setdefault(r.case.family, []).append(r)
    codes = collections.Counter(r.code for r in results)
    runs = sum(r.case.runs for r in results)

    def count(word):
        return sum(1 for r in results for p in r.problems if p.startswith(word))

    print(f"\n{'family':28} {'cases':>6} {'runs':>6} {'failed':>6}  exit codes")
    for fam, rs in sorted(fams.items()):
        c = collections.Counter(r.code for r in rs)
        print(f"{fam:28} {len(rs):6} {sum(r.case.runs for r in rs):6} {sum(1 for r in rs if r.problems):6}  "
              + ", ".join(f"{k}: {v}" for k, v in sorted(c.items(), key=lambda kv: str(kv[0]))))
    print(f"{'total':28} {len(results):6} {runs:6} {sum(1 for r in results if r.problems):6}")
    print(f"\nexit codes seen: " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items(), key=lambda kv: str(kv[0]))))
    print(f"files damaged: {count('damaged')}")
    print(f"wrong exit 0: {count('wrong exit 0')}")
    print(f"internal errors: {count('internal error')}")
    print(f"processes left: {count('processes left')}")
    print(f"temporary files left: {count('temporary files')}")
    print(f"stderr not one line: {count('stderr not one line')}")
    print(f"other (exit status, killed, hang, harness): "
          f"{sum(1 for r in results for p in r.problems if p.startswith(('exit ', 'killed', 'hang', 'harness')))}")
    print(f"seconds: {seconds:.0f} (jobs {args.jobs}, seed {args.seed}, cases {args.cases}{', quick' if args.quick else ''})")
    failed = [r for r in results if r.problems]
    if failed:
        print(f"\nFAILURES ({len(failed)}):")
        for r in failed:
            print(f"- [{r.case.family}] {r.case.name}: exit {r.code}")
            for p in r.problems:
                print(f"    {p}")
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in r.case.env.items())
            print(f"    command: {env + ' ' if env else ''}bash -c {shlex.quote(r.case.script)}")
            if r.case.signal:
                print(f"    signal: {r.case.signal[0]} after {r.case.signal[1]:.3f} s")
            print(f"    files: {sorted(k for k in r.case.files)} (in {r.where})")
    else:
        print("\nno failures")


if __name__ == "__main__":
    sys.exit(main())
