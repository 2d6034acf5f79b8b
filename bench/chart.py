#!/usr/bin/env python3
"""Draw throughput against concurrency from a benchmark's results.json, as an SVG.

    python3 bench/chart.py bench/results/results.json book/src/appendix-benchmarks-throughput.svg

One line per server through the median of the runs at each client count, a bar
from the slowest to the fastest run, and the median written beside each point.
The x axis is logarithmic (1, 16, 64 clients are steps of 4x); the y axis is
linear from zero, so heights compare honestly. Standard library only.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from xml.sax.saxutils import escape

STYLE = {  # key: (colour, dash pattern, marker)
    "starter": ("#1f5fa8", "", "circle"),
    "rmcp": ("#d9711c", "", "square"),
    "python": ("#2e8b3a", "", "diamond"),
    "ceiling": ("#7a7a7a", "6 4", "circle"),
    "tiny_http": ("#a0a0a0", "2 3", "square"),
}
WIDTH, HEIGHT = 720, 430
LEFT, RIGHT, TOP, BOTTOM = 78, 200, 74, 58


def nice_step(span: float) -> float:
    raw = span / 5
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def short(value: float) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"


def marker(kind: str, x: float, y: float, colour: str) -> str:
    if kind == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}"/>'
    if kind == "diamond":
        return (f'<polygon points="{x:.1f},{y - 5.5:.1f} {x + 5.5:.1f},{y:.1f} {x:.1f},{y + 5.5:.1f} '
                f'{x - 5.5:.1f},{y:.1f}" fill="{colour}"/>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{colour}"/>'


def chart(data: dict) -> str:
    levels = data["method"]["concurrency"]
    series = []
    for server in data["servers"]:
        points = []
        for level in levels:
            values = [r["load"][str(level)]["rps"] for r in data["runs"]
                      if r["server"] == server["key"] and str(level) in r["load"]]
            if values:
                points.append((level, statistics.median(values), min(values), max(values)))
        series.append((server, points))
    top = max(p[3] for _, points in series for p in points)
    step = nice_step(top)
    y_max = math.ceil(top * 1.08 / step) * step

    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    lo, hi = math.log(min(levels)), math.log(max(levels))

    def px(level: float) -> float:
        return LEFT + 20 + (math.log(level) - lo) / ((hi - lo) or 1) * (plot_w - 40)

    def py(value: float) -> float:
        return TOP + plot_h - value / y_max * plot_h

    e, m = data["environment"], data["method"]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">tools/call PingME: requests per second '
        'against concurrent clients</text>',
        f'<text x="{LEFT}" y="42" fill="#555">{escape(e["date"])}, {e["cpus"]} CPUs, {escape(m["pinning"])}</text>',
        f'<text x="{LEFT}" y="58" fill="#555">median of {m["runs"]} run{"s" if m["runs"] != 1 else ""} of {m["duration_s"]} s each; '
        'bars from the slowest to the fastest run</text>',
    ]
    # Grid and y axis.
    value = 0.0
    while value <= y_max + 1e-9:
        y = py(value)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" fill="#333">{short(value)}</text>')
        value += step
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#333"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="#333"/>')
    out.append(f'<text x="18" y="{TOP + plot_h / 2:.1f}" transform="rotate(-90 18 {TOP + plot_h / 2:.1f})" '
               'text-anchor="middle" fill="#333">requests per second</text>')
    for level in levels:
        x = px(level)
        out.append(f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" y2="{TOP + plot_h + 5}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 20}" text-anchor="middle" fill="#333">{level}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 14}" text-anchor="middle" fill="#333">'
               'concurrent clients (keep-alive connections; log scale)</text>')
    # The series; value labels are placed after, pushed apart where they would overlap.
    labels: dict[int, list[list]] = {}
    for server, points in series:
        colour, dash, kind = STYLE.get(server["key"], ("#000000", "", "circle"))
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(l):.1f},{py(med):.1f}" for i, (l, med, _, _) in enumerate(points))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>')
        for level, med, low, high in points:
            x = px(level)
            if high > low:
                out.append(f'<line x1="{x:.1f}" y1="{py(low):.1f}" x2="{x:.1f}" y2="{py(high):.1f}" '
                           f'stroke="{colour}" stroke-width="1.5"/>')
                for v in (low, high):
                    out.append(f'<line x1="{x - 4:.1f}" y1="{py(v):.1f}" x2="{x + 4:.1f}" y2="{py(v):.1f}" '
                               f'stroke="{colour}" stroke-width="1.5"/>')
            out.append(marker(kind, x, py(med), colour))
            labels.setdefault(level, []).append([py(med) - 6, colour, short(med)])
    for level, items in labels.items():
        items.sort(key=lambda item: item[0])
        for above, below in zip(items, items[1:]):
            below[0] = max(below[0], above[0] + 13)
        for y, colour, text in items:
            out.append(f'<text x="{px(level) + 8:.1f}" y="{y:.1f}" fill="{colour}" font-size="11">{text}</text>')
    # Legend.
    lx, ly = LEFT + plot_w + 22, TOP + 10
    for i, (server, _) in enumerate(series):
        colour, dash, kind = STYLE.get(server["key"], ("#000000", "", "circle"))
        y = ly + i * 24
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{lx}" y1="{y}" x2="{lx + 26}" y2="{y}" stroke="{colour}" stroke-width="2"{dash_attr}/>')
        out.append(marker(kind, lx + 13, y, colour))
        out.append(f'<text x="{lx + 34}" y="{y + 4}" fill="#222">{escape(server["label"])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py RESULTS.json OUT.svg")
    data = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(chart(data))


if __name__ == "__main__":
    main()
