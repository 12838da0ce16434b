"""Plots of a regularisation path: plain SVG written by rankkit (no dependency), or PNG through
matplotlib when it is installed (the optional extra `rankkit[plot]`).

The plot shows the validation metric (left axis) and the number of violated pairs, the active set
(right axis), against log10 C, with the chosen point marked.
"""

from __future__ import annotations

import math

from rankkit.errors import UsageError
from rankkit.io.atomic import atomic_open


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

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">rankkit path ({result.method}): '
        f'validation {result.metric} and active set against C</text>',
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


def write_plot(path: str, result) -> None:
    if path.lower().endswith(".svg"):
        with atomic_open(path) as fh:
            fh.write(_svg(result))
        return
    if path.lower().endswith(".png"):
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise UsageError("a PNG plot needs matplotlib (pip install 'rankkit[plot]'); an .svg plot needs nothing") from None
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
        return
    raise UsageError(f"--plot '{path}': the file name must end in .svg or .png")


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def grid_svg(solver: str, metric: str, convention: str, series, width=760, height=420) -> str:
    """The validation metric along a grid, one line per fold: series = [(fold, grid points (dicts
    of hyperparameters), values, chosen index)]. The x axis is the point's index along the grid
    (most regularised first), labelled with its hyperparameters; the chosen point is circled."""
    L, R, T, B = 80, 130, 40, 70
    n = max((len(p) for _, p, _, _ in series), default=1)
    finite = [v for _, _, vs, _ in series for v in vs if v is not None and v == v]
    y_lo, y_hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if y_hi == y_lo:
        y_hi = y_lo + 1e-9

    def px(i):
        return L + (i / max(n - 1, 1)) * (width - L - R)

    def py(y):
        return T + (1 - (y - y_lo) / (y_hi - y_lo)) * (height - T - B)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">rankkit experiment: {_escape(solver)}, '
        f'validation {_escape(metric)} ({_escape(convention)}) along the grid, per fold</text>',
        f'<line x1="{L}" y1="{height - B}" x2="{width - R}" y2="{height - B}" stroke="black"/>',
        f'<line x1="{L}" y1="{T}" x2="{L}" y2="{height - B}" stroke="black"/>',
    ]
    points = max((p for _, p, _, _ in series), key=len, default=[])
    step = max(1, n // 10)
    for i, pt in enumerate(points):
        if i % step == 0 or i == n - 1:
            label = " ".join(f"{k} {v:.3g}" for k, v in pt.items()) or "-"
            out.append(f'<text x="{px(i):.1f}" y="{height - B + 14}" text-anchor="end" '
                       f'transform="rotate(-30 {px(i):.1f} {height - B + 14})">{_escape(label)}</text>')
    for k in range(5):
        y = y_lo + (y_hi - y_lo) * k / 4
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.4g}</text>')
    out.append(f'<text x="18" y="{(T + height - B) / 2}" transform="rotate(-90 18 {(T + height - B) / 2})" '
               f'text-anchor="middle">validation {_escape(metric)}</text>')
    for j, (fold, _, values, chosen) in enumerate(series):
        colour = _COLOURS[j % len(_COLOURS)]
        d = " ".join(f"{'M' if i == 0 else 'L'}{px(i):.1f},{py(v):.1f}" for i, v in enumerate(values)
                     if v is not None and v == v)
        out.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        v = values[chosen] if 0 <= chosen < len(values) else None
        if v is not None and v == v:
            out.append(f'<circle cx="{px(chosen):.1f}" cy="{py(v):.1f}" r="4" fill="none" stroke="{colour}" '
                       'stroke-width="2"/>')
        out.append(f'<text x="{width - R + 10}" y="{T + 16 * j + 10}" fill="{colour}">{_escape(fold)}</text>')
    out.append(f'<text x="{width - R + 10}" y="{T + 16 * len(series) + 14}">o chosen</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_grid_plot(path: str, solver: str, metric: str, convention: str, series) -> None:
    """grid_svg, written atomically."""
    with atomic_open(path) as fh:
        fh.write(grid_svg(solver, metric, convention, series))
