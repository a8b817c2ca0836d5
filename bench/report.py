"""Statistics, tables, JSON and the SVG chart of a benchmark run.

Everything here works on plain data collected by run.py; nothing runs a
benchmark. A ratio is always turnloop's median divided by io_context's, in the
row's own unit, so whether above 1 is good depends on the unit: every row
says which direction is better.
"""

import json
import math
import statistics

SIDES = ("io_context", "io_context_1", "turnloop")
SIDE_TITLES = {"io_context": "io_context", "io_context_1": "io_context(1)",
               "turnloop": "turnloop"}


def summarise(values):
    """Median, min, max and coefficient of variation of measured values."""
    if not values:
        return None
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean if len(values) > 1 and mean else 0.0
    return {"median": statistics.median(values), "min": min(values),
            "max": max(values), "cv": cv, "runs": len(values)}


def ratio(row, baseline):
    mine, theirs = row["sides"].get("turnloop"), row["sides"].get(baseline)
    if not mine or not theirs or "summary" not in mine or "summary" not in theirs:
        return None
    base = theirs["summary"]["median"]
    return mine["summary"]["median"] / base if base else None


def cell(side_entry, digits):
    """What a table shows for one side of one row."""
    if side_entry is None:
        return "—"
    if side_entry.get("pending"):
        return "pending: " + side_entry["pending"]
    if side_entry.get("failure"):
        return "FAILED"
    return f"{side_entry['summary']['median']:.{digits}f}"


def ratio_text(value):
    return "—" if value is None else f"{value:.2f}"


def spread_text(row):
    """Coefficient of variation per side, in percent, io / io(1) / turnloop."""
    parts = []
    for side in SIDES:
        entry = row["sides"].get(side)
        if entry and "summary" in entry:
            parts.append(f"{100 * entry['summary']['cv']:.1f}")
        else:
            parts.append("—")
    return "/".join(parts)


def render_table(headers, rows):
    """A Markdown table whose columns line up in a terminal too."""
    widths = [max(len(str(r[i])) for r in [headers] + rows)
              for i in range(len(headers))]
    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in rows])


def timing_table(rows):
    headers = ["workload", "unit", "better", "io_context", "io_context(1)",
               "turnloop", "tl/io", "tl/io(1)", "cv % (io/io1/tl)"]
    body = []
    for row in rows:
        body.append([row["name"], row["unit"], row["better"],
                     *(cell(row["sides"].get(s), row["digits"]) for s in SIDES),
                     ratio_text(row.get("ratio_io_context")),
                     ratio_text(row.get("ratio_io_context_1")),
                     spread_text(row)])
    return render_table(headers, body)


def memory_table(rows):
    headers = ["context", "config", "resident KiB", "resident min–max",
               "anonymous KiB", "heap KiB"]
    body = []
    for row in rows:
        def value(metric, digits):
            entry = row["metrics"].get(metric)
            if row.get("failure"):
                return "FAILED"
            return "—" if entry is None else f"{entry['median']:.{digits}f}"
        resident = row["metrics"].get("resident_kib")
        body.append([row["context"], row["config"], value("resident_kib", 0),
                     "—" if resident is None
                     else f"{resident['min']:.0f}–{resident['max']:.0f}",
                     value("anonymous_kib", 0), value("heap_kib", 2)])
    return render_table(headers, body)


def allocation_table(rows):
    headers = ["workload", "io_context", "io_context(1)", "turnloop"]
    body = [[row["name"], *(cell(row["sides"].get(s), 3) for s in SIDES)]
            for row in rows]
    return render_table(headers, body)


def callgrind_table(rows):
    headers = ["workload", "io_context", "io_context(1)", "turnloop",
               "tl/io", "tl/io(1)"]
    body = [[row["name"], *(cell(row["sides"].get(s), 1) for s in SIDES),
             ratio_text(row.get("ratio_io_context")),
             ratio_text(row.get("ratio_io_context_1"))] for row in rows]
    return render_table(headers, body)


def write_json(path, document):
    with open(path, "w") as f:
        json.dump(document, f, indent=1, ensure_ascii=False)
        f.write("\n")


def _escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def advantage(row, key):
    """How many times better turnloop did than the baseline: the ratio for a
    higher-is-better row, its inverse for a lower-is-better one, so every bar
    to the right of 1.0 is a win and every bar to the left a loss."""
    v = row.get(key)
    if not v:
        return None
    return v if row["better"] == "higher" else 1.0 / v


def idle_chart_rows(idle_rows):
    """The idle-context table as chart rows, resident set and heap of
    turnloop's default config: against io_context as constructed (no
    reactor), and against io_context(1) with a steady_timer, since turnloop
    builds its reactor in its constructor."""
    def median(context, config, metric):
        for row in idle_rows:
            entry = row["metrics"].get(metric)
            if (row["context"], row["config"]) == (context, config) and entry:
                return entry["median"]
        return None
    rows = []
    for metric, label in (("resident_kib", "resident"), ("heap_kib", "heap")):
        mine = median("turnloop", "default", metric)
        row = {"name": f"idle context {label} (turnloop default)",
               "unit": "KiB", "better": "lower"}
        for key, context, config in (
                ("ratio_io_context", "io_context", "—"),
                ("ratio_io_context_1", "io_context(1)",
                 "+ steady_timer (reactor)")):
            theirs = median(context, config, metric)
            row[key] = mine / theirs if mine and theirs else None
        rows.append(row)
    return rows


def write_svg(path, rows, subtitle):
    """Horizontal bars of turnloop's advantage per row on a log scale, with a
    reference line at 1.0: one bar against io_context, one against
    io_context(1)."""
    plotted = [r for r in rows if r.get("ratio_io_context")
               or r.get("ratio_io_context_1")]
    ratios = [v for r in plotted
              for v in (advantage(r, "ratio_io_context"),
                        advantage(r, "ratio_io_context_1"))
              if v]
    if not ratios:
        return False
    # A log axis that always shows 1.0 and a little room past the extremes.
    lo = math.log(min(0.5, min(ratios) / 1.15))
    hi = math.log(max(2.0, max(ratios) * 1.15))
    label_w, plot_w, value_w = 330, 520, 110
    row_h, top = 30, 70
    width = label_w + plot_w + value_w
    height = top + row_h * len(plotted) + 60
    def x_of(v):
        return label_w + (math.log(v) - lo) / (hi - lo) * plot_w
    colours = {"ratio_io_context": "#3b6fb6", "ratio_io_context_1": "#9bbbe6"}

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="22" font-size="15" font-weight="bold">'
           f'turnloop against io_context: times better, from medians '
           f'(log scale; right of 1 = turnloop better)</text>',
           f'<text x="10" y="42" fill="#555">{_escape(subtitle)}</text>']
    fine = hi - lo <= math.log(8)
    ticks = [t for t in (1 / 64, 1 / 32, 1 / 16, 1 / 8, 0.25, 0.5, 0.75, 1, 1.5,
                         2, 4, 8, 16, 32, 64)
             if lo <= math.log(t) <= hi and (fine or t not in (0.75, 1.5))]
    axis_bottom = top + row_h * len(plotted)
    for t in ticks:
        x = x_of(t)
        out.append(f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" '
                   f'y2="{axis_bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_bottom + 16}" '
                   f'text-anchor="middle" fill="#555">{t:g}</text>')
    for i, row in enumerate(plotted):
        y = top + i * row_h
        hint = ("turnloop/io_context" if row["better"] == "higher"
                else "io_context/turnloop")
        out.append(f'<text x="{label_w - 8}" y="{y + 13}" text-anchor="end">'
                   f'{_escape(row["name"])}</text>')
        out.append(f'<text x="{label_w - 8}" y="{y + 25}" text-anchor="end" '
                   f'fill="#777" font-size="10">{_escape(row["unit"])}, {hint}</text>')
        for j, key in enumerate(("ratio_io_context", "ratio_io_context_1")):
            v = advantage(row, key)
            if not v:
                continue
            x0, x1 = sorted((x_of(1.0), x_of(v)))
            by = y + 3 + j * 11
            out.append(f'<rect x="{x0:.1f}" y="{by}" width="{max(x1 - x0, 1):.1f}" '
                       f'height="10" fill="{colours[key]}"/>')
            out.append(f'<text x="{label_w + plot_w + 6}" y="{by + 9}" '
                       f'font-size="10">{v:.2f}</text>')
    one = x_of(1.0)
    out.append(f'<line x1="{one:.1f}" y1="{top - 8}" x2="{one:.1f}" '
               f'y2="{axis_bottom}" stroke="black" stroke-width="1.5"/>')
    legend_y = axis_bottom + 38
    out.append(f'<rect x="{label_w}" y="{legend_y - 9}" width="10" height="10" '
               f'fill="{colours["ratio_io_context"]}"/>')
    out.append(f'<text x="{label_w + 14}" y="{legend_y}">vs io_context</text>')
    out.append(f'<rect x="{label_w + 120}" y="{legend_y - 9}" width="10" '
               f'height="10" fill="{colours["ratio_io_context_1"]}"/>')
    out.append(f'<text x="{label_w + 134}" y="{legend_y}">vs io_context(1)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return True
