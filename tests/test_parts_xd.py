"""The line search's X d summed from CG's own products on parts (issue 39), as one process sums it
(tests/test_newton_xd.py): each hv round brings the previous CG step's alpha, the line search's
first round the last one, and the parts add alpha X p into their delta (rankkit.parts.worker).
Checked in this process (LocalProblem runs the workers' task functions): the line search forms no
product X d where the direction was summed; one part is `rankkit train FILE`'s fit bit for bit
with the sum, past the step budget and past the lineage budget (rankkit.solvers.newton.SummedXd),
with each preconditioner on raw feature scales, and with a sum continued across CG's restart;
a part lost in the middle of CG, or just before the line search, replays the direction's steps
(alpha, p) from the lineage, the same bytes; and a task run twice (a batch submitted again when
the workers change under it) adds its step once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rankkit.distributed import fit_newton
from rankkit.io.svmlight import read_svmlight
from rankkit.objectives import base as objective_base
from rankkit.parts import newton as parts_newton
from rankkit.parts import worker as W
from rankkit.solvers import newton
from rankkit.solvers.newton import NewtonRankSVM

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.train.txt"
FIT = dict(C=1.0, tol=1e-12)  # 7 Newton iterations on the sample


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """The sample cut into three parts of whole queries."""
    d = tmp_path_factory.mktemp("xd-parts")
    lines = SAMPLE.read_bytes().splitlines(True)
    qids = [re.search(rb"qid:(\d+)", ln).group(1) for ln in lines]
    starts = [0] + [i for i in range(1, len(lines)) if qids[i] != qids[i - 1]]
    cuts = [starts[len(starts) * k // 3] for k in range(3)] + [len(lines)]
    paths = []
    for k in range(3):
        (d / f"part-{k}.txt").write_bytes(b"".join(lines[cuts[k]:cuts[k + 1]]))
        paths.append(str(d / f"part-{k}.txt"))
    return paths


@pytest.fixture(scope="module")
def reference(parts):
    return fit_newton(parts, None, **FIT)[0]


def _same(a, b):
    assert a.w.tobytes() == b.w.tobytes()
    assert (a.iterations, a.extra, a.objective, a.n_active) == (b.iterations, b.extra, b.objective, b.n_active)


class Products:
    """Products X.v (objective_base.csr_matvec) made inside the worker's line-search tasks, per
    line search: summed (True) or not."""

    def __init__(self, monkeypatch):
        self.n = 0
        self.searches = []  # (summed, products X.v made by its first round over the parts)
        real = objective_base.csr_matvec

        def counting(*args, **kwargs):
            self.n += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(objective_base, "csr_matvec", counting)
        real_ls = parts_newton.LocalProblem.ls
        seen = set()

        def ls(prob, key, how, dkey, d, t, summed=None):
            before = self.n
            out = real_ls(prob, key, how, dkey, d, t, summed)
            if dkey not in seen:
                seen.add(dkey)
                self.searches.append((summed is not None, self.n - before))
            return out

        monkeypatch.setattr(parts_newton.LocalProblem, "ls", ls)


def test_parts_sum_x_d_and_the_line_search_makes_no_product(parts, monkeypatch):
    """No product X d on any part, and no round of its own: the alphas ride on the rounds there were."""
    counted = Products(monkeypatch)
    res, facts = fit_newton(parts, None, **FIT)
    assert counted.searches and counted.searches == [(True, 0)] * len(counted.searches)
    monkeypatch.setattr(newton, "XD_KEPT_PER_NNZ", 0.0)  # no direction summed: X d by a product on each part
    counted.searches.clear()
    res0, facts0 = fit_newton(parts, None, **FIT)
    assert counted.searches == [(False, 3)] * len(counted.searches)
    assert (res.iterations, res.extra["cg_iterations"]) == (res0.iterations, res0.extra["cg_iterations"])
    assert facts["rounds"] == facts0["rounds"]


@pytest.mark.parametrize("budget", ["default", "one step", "kept for two directions", "none"])
def test_one_part_is_train_file_bit_for_bit_with_and_past_the_budgets(monkeypatch, budget):
    """The same directions summed (or not) and the same arithmetic on both faces: a fit on one part
    is NewtonRankSVM's on the file, bit for bit, whichever budget stops the sum."""
    ds = read_svmlight(str(SAMPLE), narrow_indices=True)
    if budget == "one step":
        monkeypatch.setattr(newton, "XD_STEPS_PER_NNZ", 1e-9)
    elif budget == "kept for two directions":  # the sample's directions take 2, 2, 3, 3, 5 CG steps of 20 features
        monkeypatch.setattr(newton, "XD_KEPT_PER_NNZ", 5 * ds.n_features / ds.nnz)
    elif budget == "none":
        monkeypatch.setattr(newton, "XD_KEPT_PER_NNZ", 0.0)
    summed = []
    real = newton.SummedXd.take
    monkeypatch.setattr(newton.SummedXd, "take", lambda self, d: summed.append(real(self, d)) or summed[-1])
    one = fit_newton([str(SAMPLE)], None, **FIT)[0]
    on_parts = list(summed)
    summed.clear()
    ref = NewtonRankSVM(**FIT).fit(ds)
    _same(one, ref)
    assert on_parts == summed and summed  # the same directions summed, of the same steps
    if budget == "default":
        assert all(summed)
    elif budget == "one step":
        assert set(summed) <= {0, 1} and 0 in summed
    elif budget == "kept for two directions":
        assert all(summed[:2]) and not any(summed[2:])
    else:
        assert not any(summed)


@pytest.mark.parametrize("when", ["mid-CG", "before the line search", "both"])
def test_a_part_lost_during_a_summed_direction_replays_it(parts, reference, monkeypatch, when):
    """Parts 0 and 2 dropped from this process's state (what a lost worker leaves) at the third
    Newton step: after its second hv round (their sum lost in the middle of CG) or at its line
    search's first round: read again, they replay the point's lineage and the direction's CG steps
    (alpha, p): the same bytes."""
    replayed = []
    real_replay = W._replay_sum
    monkeypatch.setattr(W, "_replay_sum", lambda st, summed, y: replayed.append(len(summed)) or real_replay(st, summed, y))
    rounds = {"hv": 0, "ls": 0}
    newton_step = [0]
    real_direction = newton.Preconditioned.solve

    def solve(self, b, rtol, certify=None, x=None, r=None):
        if x is None:
            newton_step[0] += 1
            rounds["hv"] = rounds["ls"] = 0
        return real_direction(self, b, rtol, certify, x, r)

    monkeypatch.setattr(newton.Preconditioned, "solve", solve)
    dropped = []

    def drop():
        for k in [k for k in list(W._STATE) if k[1] in (0, 2) and k[0] == fit_ids[-1]]:
            del W._STATE[k]
            dropped.append(k)

    def wrap(name):
        real = getattr(W, name)

        def task(spec, *args, **kwargs):
            if spec.index == 0 and newton_step[0] == 3:
                rounds[name] += 1
                if rounds[name] == (2 if name == "hv" else 1) and when in ("both", "mid-CG" if name == "hv"
                                                                             else "before the line search"):
                    drop()
            return real(spec, *args, **kwargs)

        monkeypatch.setattr(W, name, task)

    wrap("hv")
    wrap("ls")
    fit_ids = []
    real_init = parts_newton.LocalProblem.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        fit_ids.append(self.fit_id)

    monkeypatch.setattr(parts_newton.LocalProblem, "__init__", init)
    res, facts = fit_newton(parts, None, **FIT)
    assert len(dropped) == (4 if when == "both" else 2) and facts["parts_read_again"] == len(dropped)
    _same(res, reference)
    assert replayed and all(n >= 1 for n in replayed)  # the direction's summed steps were replayed


def test_a_task_run_twice_adds_its_step_once(parts, reference, monkeypatch):
    """Every task of every round run twice on its part (as when a batch is submitted again after
    the workers changed under it): the second run of an hv round adds nothing more to the sum."""

    def twice(self, fn, ks, args, tag):
        for k in ks:
            fn(self.specs[k], *args)
        return [fn(self.specs[k], *args) for k in ks]

    monkeypatch.setattr(parts_newton.LocalProblem, "_run", twice)
    replayed = []
    real_replay = W._replay_sum
    monkeypatch.setattr(W, "_replay_sum", lambda *a: replayed.append(1) or real_replay(*a))
    res, _ = fit_newton(parts, None, **FIT)
    _same(res, reference)
    assert not replayed  # the sums stayed whole: no part needed the lineage


@pytest.mark.parametrize("precondition", ["auto", "diag", "dense"])
def test_one_raw_part_is_train_file_bit_for_bit_through_the_preconditioners(tmp_path, monkeypatch, precondition):
    """MSLR-like feature scales (CG preconditioned by the diagonal from the start, escalating to the
    d x d matrix, each restart continuing CG's sum from its iterate): one part and the file, the
    same bytes, with directions summed."""
    from tests.test_distributed_bytes import _raw

    raw = tmp_path / "raw.txt"
    raw.write_bytes(b"".join(_raw(ln) for ln in SAMPLE.read_bytes().splitlines(True)))
    summed = []
    real = newton.SummedXd.take
    monkeypatch.setattr(newton.SummedXd, "take", lambda self, d: summed.append(real(self, d)) or summed[-1])
    prob = parts_newton.LocalProblem([str(raw)])
    try:
        one = prob.fit(1.0, precondition=precondition, max_iter=30)
    finally:
        prob.close()
    on_parts = list(summed)
    summed.clear()
    ds = read_svmlight(str(raw), narrow_indices=True)
    obj = newton.LocalObjective(NewtonRankSVM(C=1.0).objective(ds), ds)
    ref = newton.truncated_newton(obj, max_iter=30, precondition=precondition)
    _same(one, ref)
    assert on_parts == summed and any(summed)


def test_a_sum_continued_across_a_restart_is_train_file_bit_for_bit(monkeypatch):
    """C = 100 on the sample: a direction takes 5 plain CG steps, then the d x d preconditioner and
    CG continues from its iterate (a copy): the sum goes on over the 6 steps (budgets raised), on
    one part as in one process, the same bytes."""
    monkeypatch.setattr(newton, "XD_STEPS_PER_NNZ", 1e9)
    monkeypatch.setattr(newton, "XD_KEPT_PER_NNZ", 1e9)
    summed = []
    real = newton.SummedXd.take
    monkeypatch.setattr(newton.SummedXd, "take", lambda self, d: summed.append(real(self, d)) or summed[-1])
    fit = dict(C=100.0, tol=1e-12)
    one = fit_newton([str(SAMPLE)], None, **fit)[0]
    on_parts = list(summed)
    summed.clear()
    _same(one, NewtonRankSVM(**fit).fit(read_svmlight(str(SAMPLE), narrow_indices=True)))
    assert on_parts == summed and max(summed) > newton.PLAIN_STEPS_DENSE  # summed across the restart
