"""Memory limits across a run (issue 25): `ulimit -v` from below what Python needs to start up to
more than a run needs, for train, predict and eval replacing their outputs. Each outcome is exit 0
with exactly the output of an unlimited run, or exit 3 with one line `rankkit: error: out of
memory: ...` and the previous output intact; never exit 1, a traceback, a temporary file or
another tool's message (OpenBLAS's, numba's loader's). Slow (a dozen real runs): make test-all /
make fuzz; the single points are in test_faults.py."""

from __future__ import annotations

import os
import resource

import pytest

from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN
from tests.test_faults import no_temp_files, primed, run  # noqa: F401 - primed is a fixture

LIMITS_MB = (100, 300, 511, 512, 540, 600, 800, 1200)


def _args(command, model):
    return {"train": ["train", SAMPLE_TRAIN, "out.txt", "-C", "0.01"],
            "predict": ["predict", SAMPLE_TEST, model, "out.txt"],
            "eval": ["eval", SAMPLE_TEST, "scores.txt"]}[command]


def _limited(mb):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return apply


@pytest.mark.fuzz
@pytest.mark.slow
@pytest.mark.parametrize("command", ["train", "predict", "eval"])
def test_every_address_space_limit_gives_the_result_or_exit_3(tmp_path, primed, command):
    env = primed["env"]
    (tmp_path / "scores.txt").write_bytes(primed["scores"])
    free = run(_args(command, primed["model"]), tmp_path, env)
    assert free.returncode == 0, free.stderr
    expected = free.stdout if command == "eval" else (tmp_path / "out.txt").read_bytes()
    previous = primed["model"].read_bytes() if command == "train" else b"previous\n"
    seen = set()
    for mb in LIMITS_MB:
        (tmp_path / "out.txt").write_bytes(previous)
        proc = run(_args(command, primed["model"]), tmp_path, env, preexec_fn=_limited(mb))
        err = proc.stderr.decode("utf-8", "replace")
        seen.add(proc.returncode)
        assert proc.returncode in (0, 3), (mb, proc.returncode, err)
        out = proc.stdout if command == "eval" and proc.returncode == 0 else (tmp_path / "out.txt").read_bytes()
        if proc.returncode == 0:
            same = out == expected or (command == "train" and _same_weights(tmp_path / "out.txt", primed["model"]))
            assert same, (mb, "exit 0 with another output")
        else:
            assert err.startswith("rankkit: error: out of memory: ") and err.count("\n") == 1, (mb, err)
            assert out == previous, (mb, "the previous output was changed")
        assert no_temp_files(tmp_path), mb
    assert 3 in seen and 0 in seen, seen  # the sweep reached both sides


def _same_weights(a, b) -> bool:
    import numpy as np

    from rankkit.io.model import read_model

    return np.array_equal(read_model(str(a)).weights, read_model(str(b)).weights)
