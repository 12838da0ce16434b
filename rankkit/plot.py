"""Plots of a regularisation path: plain SVG written by rankkit (no dependency), or PNG through
matplotlib when it is installed (the optional extra `rankkit[plot]`).

Kinds (`rankkit path --plot-kind`, RegularizationPath.plot(kind=...)):

- metric (the default): the validation metric (left axis) and the number of violated pairs, the
  active set (right axis), against log10 C, with the chosen point marked;
- coef, decision: curves along the path against log10 C (the paper's Fig. 4 as curves): the
  coefficients (linear: w_j of the features; kernels: beta_r of training documents) or the decision
  values f(x) of chosen validation documents. The curves are computed by the core
  (rankkit.selection.path_curves) and handed here as a `Curves`; this module only draws.
- plane_svg: the decision function over the plane of a 2-feature data set at a few points of the
  path, with the training documents (the paper's Fig. 4 as drawn there: scripts/reproduce_zapien.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rankkit.errors import UsageError
from rankkit.io.atomic import atomic_open


def _svg_start(width, height, title: str, title_x=None, title_size=14, title_y=20) -> list:
    """The opening of every SVG rankkit draws: the root element, a white ground and the title
    (already escaped)."""
    x = width / 2 if title_x is None else title_x
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
            'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
            f'<text x="{x}" y="{title_y}" text-anchor="middle" font-size="{title_size}">{title}</text>']


def _svg(result, width=760, height=420) -> str:
    L, R, T, B = 80, 90, 40, 50
    xs = [math.log10(p.C) for p in result.points]
    ys = [p.metric for p in result.points]
    act = [p.n_active for p in result.points]
    finite = [y for y in ys if y == y]
    y_lo, y_hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if y_hi == y_lo:
        y_hi = y_lo + 1e-9
    a_hi = max(max(act), 1)
    x_lo, x_hi = min(xs), max(xs)
    if x_hi == x_lo:
        x_hi = x_lo + 1.0

    def px(x):
        return L + (x - x_lo) / (x_hi - x_lo) * (width - L - R)

    def py(y):
        return T + (1 - (y - y_lo) / (y_hi - y_lo)) * (height - T - B)

    def pa(a):
        return T + (1 - a / a_hi) * (height - T - B)

    out = _svg_start(width, height, f"rankkit path ({result.method}): validation {result.metric} and active set "
                     "against C") + [
        f'<line x1="{L}" y1="{height - B}" x2="{width - R}" y2="{height - B}" stroke="black"/>',
        f'<line x1="{L}" y1="{T}" x2="{L}" y2="{height - B}" stroke="#1f77b4"/>',
        f'<line x1="{width - R}" y1="{T}" x2="{width - R}" y2="{height - B}" stroke="#d62728"/>',
    ]
    for k in range(math.floor(x_lo), math.ceil(x_hi) + 1):
        if x_lo - 1e-9 <= k <= x_hi + 1e-9:
            out.append(f'<text x="{px(k):.1f}" y="{height - B + 16}" text-anchor="middle">1e{k}</text>')
    for k in range(5):
        y = y_lo + (y_hi - y_lo) * k / 4
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end" fill="#1f77b4">{y:.4g}</text>')
        a = a_hi * k / 4
        out.append(f'<text x="{width - R + 6}" y="{pa(a) + 4:.1f}" fill="#d62728">{a:.3g}</text>')
    out.append(f'<text x="{(L + width - R) / 2}" y="{height - 12}" text-anchor="middle">C (log scale)</text>')
    out.append(f'<text x="18" y="{(T + height - B) / 2}" transform="rotate(-90 18 {(T + height - B) / 2})" '
               f'text-anchor="middle" fill="#1f77b4">validation {result.metric}</text>')
    out.append(f'<text x="{width - 14}" y="{(T + height - B) / 2}" transform="rotate(90 {width - 14} '
               f'{(T + height - B) / 2})" text-anchor="middle" fill="#d62728">violated pairs</text>')
    metric_d = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(zip(xs, ys)) if y == y)
    active_d = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{pa(a):.1f}" for i, (x, a) in enumerate(zip(xs, act)))
    out.append(f'<path d="{active_d}" fill="none" stroke="#d62728" stroke-width="1.5" stroke-dasharray="5,3"/>')
    out.append(f'<path d="{metric_d}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    c = result.best
    out.append(f'<circle cx="{px(math.log10(c.C)):.1f}" cy="{py(c.metric):.1f}" r="5" fill="none" stroke="black" '
               f'stroke-width="2"/>')
    out.append(f'<text x="{px(math.log10(c.C)) + 8:.1f}" y="{py(c.metric) - 8:.1f}">chosen ({result.select}): '
               f'C = {c.C:.3g}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def check_plot_target(path: str) -> None:
    """Before any work: the plot's format is one rankkit can write here."""
    lower = path.lower()
    if lower.endswith(".svg"):
        return
    if lower.endswith(".png"):
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise UsageError("a PNG plot needs matplotlib (pip install 'rankkit[plot]'); an .svg plot needs nothing")
        return
    raise UsageError(f"--plot {path}: the file name must end in .svg or .png (.png needs matplotlib)")


PLOT_KINDS = ("metric", "coef", "decision")


@dataclass
class Curves:
    """Curves along a path, drawn against log10 C: series = [(label, values, group)], values one
    per entry of C (NaN: not drawn); curves of one group share a colour (decision values: one
    colour per relevance label), otherwise each has its own."""

    title: str
    ylabel: str
    C: list
    series: list
    chosen_C: float | None = None
    note: str = ""  # a line under the title (what was left out, the convention, ...)
    grouped: bool = False
    legend: list = field(default_factory=list)  # (group, text) when grouped


def _ticks(lo: float, hi: float, n: int = 5) -> list:
    """About n round values between lo and hi."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw), default=raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _log_ticks(x_lo: float, x_hi: float) -> list:
    """log10 positions of round values (1, 2, 5 x 10^k when the range spans less than two decades)."""
    mult = (1, 2, 5) if x_hi - x_lo < 2 else (1,)
    out = []
    for k in range(math.floor(x_lo) - 1, math.ceil(x_hi) + 1):
        for m in mult:
            x = k + math.log10(m)
            if x_lo - 1e-9 <= x <= x_hi + 1e-9:
                out.append(x)
    return out


# relevance levels, highest first: red (ranked on top, as in the paper's Fig. 4) to blue
_LEVEL_COLOURS = ("#d62728", "#ff7f0e", "#bcbd22", "#2ca02c", "#17becf", "#9467bd", "#1f77b4")


def _curve_colour(curves, j: int, group: int) -> str:
    """A curve's colour: its own (coef), or its level's, spread from red (highest) to blue (lowest)."""
    if curves.grouped:
        n = max(len(curves.legend), 1)
        last = len(_LEVEL_COLOURS) - 1
        return _LEVEL_COLOURS[min(last, round(group * last / max(n - 1, 1)))]
    return _COLOURS[j % len(_COLOURS)]


def curves_svg(curves: Curves, width=820, height=460) -> str:
    """The curves as SVG: x = log10 C (lambda = 1/C on the top axis), y = the values."""
    L, R, T, B = 80, 190, 58, 50
    xs = [math.log10(c) for c in curves.C]
    finite = [v for _, vals, _ in curves.series for v in vals if v == v and abs(v) != math.inf]
    y_lo, y_hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if y_hi == y_lo:
        y_lo, y_hi = y_lo - 0.5, y_hi + 0.5
    pad = 0.03 * (y_hi - y_lo)
    y_lo, y_hi = y_lo - pad, y_hi + pad
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 0.5, x_hi + 0.5

    def px(x):
        return L + (x - x_lo) / (x_hi - x_lo) * (width - L - R)

    def py(y):
        return T + (1 - (y - y_lo) / (y_hi - y_lo)) * (height - T - B)

    out = _svg_start(width, height, _escape(curves.title), title_x=(L + width - R) / 2, title_y=18) + [
        f'<text x="{(L + width - R) / 2}" y="34" text-anchor="middle" font-size="11" fill="#555">'
        f'{_escape(curves.note)}</text>',
        f'<rect x="{L}" y="{T}" width="{width - L - R}" height="{height - T - B}" fill="none" stroke="black"/>',
    ]
    for x in _log_ticks(x_lo, x_hi):
        out.append(f'<line x1="{px(x):.1f}" y1="{height - B}" x2="{px(x):.1f}" y2="{height - B + 4}" stroke="black"/>')
        out.append(f'<text x="{px(x):.1f}" y="{height - B + 16}" text-anchor="middle">{10 ** x:.3g}</text>')
        out.append(f'<text x="{px(x):.1f}" y="{T - 6}" text-anchor="middle" font-size="10" fill="#555">'
                   f'{10 ** -x:.3g}</text>')
    for y in _ticks(y_lo, y_hi):
        out.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{width - R}" y2="{py(y):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.4g}</text>')
    if y_lo < 0 < y_hi:
        out.append(f'<line x1="{L}" y1="{py(0):.1f}" x2="{width - R}" y2="{py(0):.1f}" stroke="#999"/>')
    out.append(f'<text x="{(L + width - R) / 2}" y="{height - 12}" text-anchor="middle">C (log scale; '
               'lambda = 1/C on top)</text>')
    out.append(f'<text x="18" y="{(T + height - B) / 2}" transform="rotate(-90 18 {(T + height - B) / 2})" '
               f'text-anchor="middle">{_escape(curves.ylabel)}</text>')
    for j, (label, vals, group) in enumerate(curves.series):
        colour = _curve_colour(curves, j, group)
        d, pen = [], "M"
        for x, v in zip(xs, vals):
            if v == v and abs(v) != math.inf:
                d.append(f"{pen}{px(x):.1f},{py(v):.1f}")
                pen = "L"
            else:
                pen = "M"
        out.append(f'<path d="{" ".join(d)}" fill="none" stroke="{colour}" stroke-width="1.3"><title>'
                   f'{_escape(label)}</title></path>')
        if not curves.grouped and j < 24:
            out.append(f'<text x="{width - R + 10}" y="{T + 14 * j + 10}" fill="{colour}" font-size="11">'
                       f'{_escape(label)}</text>')
    if curves.grouped:
        for j, (group, text) in enumerate(curves.legend):
            out.append(f'<text x="{width - R + 10}" y="{T + 14 * j + 10}" fill="{_curve_colour(curves, j, group)}" '
                       f'font-size="11">{_escape(text)}</text>')
    if curves.chosen_C is not None and curves.chosen_C > 0 and xs:
        xc = px(math.log10(curves.chosen_C))
        out.append(f'<line x1="{xc:.1f}" y1="{T}" x2="{xc:.1f}" y2="{height - B}" stroke="black" '
                   'stroke-dasharray="4,3"/>')
        right = xc > (L + width - R) / 2  # the label on the side with room
        out.append(f'<text x="{xc + (-4 if right else 4):.1f}" y="{height - B - 6}" font-size="11" '
                   f'text-anchor="{"end" if right else "start"}">chosen C = {curves.chosen_C:.3g}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _curves_png(path: str, curves: Curves) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 5))
    for j, (label, vals, group) in enumerate(curves.series):
        colour = _curve_colour(curves, j, group)
        ax.semilogx(curves.C, [v if v == v else float("nan") for v in vals], color=colour, linewidth=1.1,
                    label=None if curves.grouped or j >= 24 else label)
    if curves.grouped:
        for j, (group, text) in enumerate(curves.legend):
            ax.plot([], [], color=_curve_colour(curves, j, group), label=text)
    if curves.chosen_C is not None:
        ax.axvline(curves.chosen_C, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("C (lambda = 1/C)")
    ax.set_ylabel(curves.ylabel)
    ax.set_title(curves.title + ("\n" + curves.note if curves.note else ""), fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    with atomic_open(path, binary=True) as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("a PNG plot needs matplotlib (pip install 'rankkit[plot]'); an .svg plot needs nothing") from None
    return plt


def write_plot(path: str, result, kind: str = "metric", curves: Curves | None = None) -> None:
    """The path's plot: kind "metric" draws `result` (a PathResult); the other kinds draw `curves`
    (rankkit.selection.path_curves). .svg without dependency, .png through matplotlib."""
    if kind not in PLOT_KINDS:
        raise UsageError(f"plot kind must be one of {', '.join(PLOT_KINDS)}, not {kind!r}")
    if kind != "metric" and curves is None:
        raise UsageError(f"a {kind} plot needs its curves (rankkit.selection.path_curves)")
    lower = path.lower()
    if lower.endswith(".svg"):
        with atomic_open(path) as fh:
            fh.write(_svg(result) if kind == "metric" else curves_svg(curves))
    elif lower.endswith(".png"):
        if kind == "metric":
            _path_png(path, result)
        else:
            _curves_png(path, curves)
    else:
        raise UsageError(f"--plot '{path}': the file name must end in .svg or .png")


def _path_png(path: str, result) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    Cs = [p.C for p in result.points]
    ax.semilogx(Cs, [p.metric for p in result.points], color="#1f77b4", label=f"validation {result.metric}")
    ax.set_xlabel("C")
    ax.set_ylabel(f"validation {result.metric}")
    ax2 = ax.twinx()
    ax2.semilogx(Cs, [p.n_active for p in result.points], color="#d62728", linestyle="--", label="violated pairs")
    ax2.set_ylabel("violated pairs")
    ax.plot([result.best.C], [result.best.metric], "ko", fillstyle="none")
    ax.set_title(f"rankkit path ({result.method}), chosen C = {result.best.C:.3g} ({result.select})")
    fig.tight_layout()
    with atomic_open(path, binary=True) as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def grid_svg(solver: str, metric: str, convention: str, series, width=760, height=420) -> str:
    """The validation metric along a grid, one line per fold: series = [(fold, grid points (dicts
    of hyperparameters), values, chosen index)]; the chosen point is circled. A grid of one
    parameter (C or lambda) is drawn against its value, log scale, most regularised on the left:
    each fold at its own values (folds' default grids differ, and the edge rule extends each fold's
    own). Other grids (K x C, gamma x C) against the point's index along the grid, labelled with
    its hyperparameters."""
    import math

    L, R, T, B = 80, 130, 40, 70
    n = max((len(p) for _, p, _, _ in series), default=1)
    finite = [v for _, _, vs, _ in series for v in vs if v is not None and v == v]
    y_lo, y_hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if y_hi == y_lo:
        y_hi = y_lo + 1e-9
    keys = {tuple(pt) for _, pts, _, _ in series for pt in pts}
    key = next(iter(keys))[0] if len(keys) == 1 and len(next(iter(keys))) == 1 else None
    if key is not None and all(pt[key] > 0 for _, pts, _, _ in series for pt in pts):
        logs = [math.log10(pt[key]) for _, pts, _, _ in series for pt in pts]
        x_lo, x_hi = min(logs), max(logs)
        if x_hi == x_lo:
            x_lo, x_hi = x_lo - 0.5, x_hi + 0.5
    else:
        key = None

    def where(i, pt):  # 0..1 along the x axis
        if key is None:
            return i / max(n - 1, 1)
        t = (math.log10(pt[key]) - x_lo) / (x_hi - x_lo)
        return 1 - t if key == "lambda" else t  # most regularised first: lambda decreasing

    def px(t):
        return L + t * (width - L - R)

    def py(y):
        return T + (1 - (y - y_lo) / (y_hi - y_lo)) * (height - T - B)

    out = _svg_start(width, height, f"rankkit experiment: {_escape(solver)}, validation {_escape(metric)} "
                     f"({_escape(convention)}) along the grid, per fold") + [
        f'<line x1="{L}" y1="{height - B}" x2="{width - R}" y2="{height - B}" stroke="black"/>',
        f'<line x1="{L}" y1="{T}" x2="{L}" y2="{height - B}" stroke="black"/>',
    ]
    if key is None:
        points = max((p for _, p, _, _ in series), key=len, default=[])
        step = max(1, n // 10)
        ticks = [(where(i, pt), " ".join(f"{k} {v:.3g}" for k, v in pt.items()) or "-")
                 for i, pt in enumerate(points) if i % step == 0 or i == n - 1]
    else:
        decades = range(math.ceil(x_lo - 1e-9), math.floor(x_hi + 1e-9) + 1)
        values = [10.0 ** e for e in decades] if len(decades) >= 2 else [10.0 ** x_lo, 10.0 ** x_hi]
        ticks = [(where(0, {key: v}), f"{key} {v:.3g}") for v in values]
    for t, label in ticks:
        out.append(f'<text x="{px(t):.1f}" y="{height - B + 14}" text-anchor="end" '
                   f'transform="rotate(-30 {px(t):.1f} {height - B + 14})">{_escape(label)}</text>')
    for k in range(5):
        y = y_lo + (y_hi - y_lo) * k / 4
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.4g}</text>')
    out.append(f'<text x="18" y="{(T + height - B) / 2}" transform="rotate(-90 18 {(T + height - B) / 2})" '
               f'text-anchor="middle">validation {_escape(metric)}</text>')
    for j, (fold, pts, values, chosen) in enumerate(series):
        colour = _COLOURS[j % len(_COLOURS)]
        xs = [where(i, pt) for i, pt in enumerate(pts)]
        drawn = sorted((x, v) for x, v in zip(xs, values) if v is not None and v == v)
        d = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(v):.1f}" for i, (x, v) in enumerate(drawn))
        out.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        v = values[chosen] if 0 <= chosen < len(values) else None
        if v is not None and v == v:
            out.append(f'<circle cx="{px(xs[chosen]):.1f}" cy="{py(v):.1f}" r="4" fill="none" stroke="{colour}" '
                       'stroke-width="2"/>')
        out.append(f'<text x="{width - R + 10}" y="{T + 16 * j + 10}" fill="{colour}">{_escape(fold)}</text>')
    out.append(f'<text x="{width - R + 10}" y="{T + 16 * len(series) + 14}">o chosen</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_grid_plot(path: str, solver: str, metric: str, convention: str, series) -> None:
    """grid_svg, written atomically."""
    with atomic_open(path) as fh:
        fh.write(grid_svg(solver, metric, convention, series))


def _diverging(t: float) -> str:
    """t in [-1, 1] -> blue (low) .. white .. red (high)."""
    t = max(-1.0, min(1.0, t))
    if t >= 0:
        r, g, b = 255, int(255 * (1 - 0.75 * t)), int(255 * (1 - 0.8 * t))
    else:
        r, g, b = int(255 * (1 + 0.8 * t)), int(255 * (1 + 0.6 * t)), 255
    return f"#{r:02x}{g:02x}{b:02x}"


def plane_svg(title: str, panels, X, y, extent, cell=4, size=300) -> str:
    """The decision function over the plane of a 2-feature data set (the paper's Fig. 4): panels =
    [(caption, F)], F[r][c] the decision value at x = x0 + (c + 0.5) (x1 - x0) / nx, y = y1 - (r +
    0.5) (y1 - y0) / ny; colours run from blue (low) to red (high), scaled per panel by the largest
    |f| (the scale of f shrinks with lambda), the black line is f = 0 (the paper's "decision function
    taken on zero"). X, y: the training documents (label 1 red, 0 blue)."""
    x0, x1, y0, y1 = extent
    gap, top, cols = 40, 46, 2
    rows = (len(panels) + cols - 1) // cols
    width = cols * size + (cols + 1) * gap
    height = top + rows * (size + 40) + gap
    out = _svg_start(width, height, _escape(title), title_size=12, title_y=22)
    for k, (caption, F) in enumerate(panels):
        ox = gap + (k % cols) * (size + gap)
        oy = top + (k // cols) * (size + 40)
        ny, nx = len(F), len(F[0])
        cw, ch = size / nx, size / ny
        scale = max((abs(v) for row in F for v in row), default=1.0) or 1.0
        out.append(f'<g shape-rendering="crispEdges">')
        for r in range(ny):
            for c in range(nx):
                out.append(f'<rect x="{ox + c * cw:.2f}" y="{oy + r * ch:.2f}" width="{cw + 0.05:.2f}" '
                           f'height="{ch + 0.05:.2f}" fill="{_diverging(F[r][c] / scale)}"/>')
        out.append("</g>")
        seg = []
        for r in range(ny):
            for c in range(nx):
                if c + 1 < nx and (F[r][c] > 0) != (F[r][c + 1] > 0):
                    xx = ox + (c + 1) * cw
                    seg.append(f"M{xx:.1f},{oy + r * ch:.1f}V{oy + (r + 1) * ch:.1f}")
                if r + 1 < ny and (F[r][c] > 0) != (F[r + 1][c] > 0):
                    yy = oy + (r + 1) * ch
                    seg.append(f"M{ox + c * cw:.1f},{yy:.1f}H{ox + (c + 1) * cw:.1f}")
        if seg:
            out.append(f'<path d="{"".join(seg)}" stroke="black" stroke-width="1.5" fill="none"/>')
        for (a, b), lab in zip(X, y):
            px_ = ox + (a - x0) / (x1 - x0) * size
            py_ = oy + (1 - (b - y0) / (y1 - y0)) * size
            if 0 <= px_ - ox <= size and 0 <= py_ - oy <= size:
                colour = "#d62728" if lab > 0 else "#1f77b4"
                out.append(f'<circle cx="{px_:.1f}" cy="{py_:.1f}" r="{cell * 0.55:.1f}" fill="{colour}" '
                           'stroke="white" stroke-width="0.6"/>')
        out.append(f'<rect x="{ox}" y="{oy}" width="{size}" height="{size}" fill="none" stroke="black"/>')
        head, _, tail = caption.partition(": ")
        out.append(f'<text x="{ox + size / 2}" y="{oy + size + 15}" text-anchor="middle" font-size="11">'
                   f'{_escape(head)}</text>')
        out.append(f'<text x="{ox + size / 2}" y="{oy + size + 29}" text-anchor="middle" font-size="11">'
                   f'{_escape(tail)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
