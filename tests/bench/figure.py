"""A small SVG line chart, written with the standard library only (no plotting package)."""

from xml.sax.saxutils import escape

# Colour-blind-safe palette (Okabe and Ito), one per series.
PALETTE = ["#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]


def nice_step(span, target_ticks=6):
    """A round tick step (1, 2 or 5 times a power of ten) giving about target_ticks ticks."""
    if span <= 0:
        return 1.0
    raw = span / target_ticks
    power = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    while power > raw:
        power /= 10
    for mult in (1, 2, 5, 10):
        if power * mult >= raw:
            return power * mult
    return power * 10


def fmt(v):
    return f"{v:g}"


def panel(out, series, box, x_range, y_max, title, x_label, y_label, markers, clip_note=None):
    """Draws one panel: axes, grid, the vertical markers (x, label) and one polyline per series."""
    left, top, width, height = box
    x0, x1 = x_range

    def sx(x):
        return left + (x - x0) / (x1 - x0) * width

    def sy(y):
        return top + height - min(y, y_max) / y_max * height

    out.append(f'<text x="{left}" y="{top - 10}" font-size="14" font-weight="bold">{escape(title)}</text>')
    step = nice_step(y_max, 5)
    y = 0.0
    while y <= y_max + 1e-9:
        out.append(f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + width}" y2="{sy(y):.1f}" '
                   'stroke="#dddddd" stroke-width="1"/>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="11" '
                   f'text-anchor="end">{fmt(y)}</text>')
        y += step
    step = nice_step(x1 - x0, 10)
    x = x0
    while x <= x1 + 1e-9:
        out.append(f'<line x1="{sx(x):.1f}" y1="{top + height}" x2="{sx(x):.1f}" '
                   f'y2="{top + height + 4}" stroke="#000000"/>')
        out.append(f'<text x="{sx(x):.1f}" y="{top + height + 17}" font-size="11" '
                   f'text-anchor="middle">{fmt(x)}</text>')
        x += step
    out.append(f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="none" '
               'stroke="#000000" stroke-width="1"/>')
    out.append(f'<text x="{left + width / 2}" y="{top + height + 34}" font-size="12" '
               f'text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text x="{left - 42}" y="{top + height / 2}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 {left - 42} {top + height / 2})">{escape(y_label)}</text>')
    for mx, label in markers:
        out.append(f'<line x1="{sx(mx):.1f}" y1="{top}" x2="{sx(mx):.1f}" y2="{top + height}" '
                   'stroke="#888888" stroke-width="1.5" stroke-dasharray="6,4"/>')
        out.append(f'<text x="{sx(mx) + 4:.1f}" y="{top + 14}" font-size="11" '
                   f'fill="#555555">{escape(label)}</text>')
    if clip_note:
        out.append(f'<text x="{left + width - 6}" y="{top + 14}" font-size="11" fill="#555555" '
                   f'text-anchor="end">{escape(clip_note)}</text>')
    for i, (name, points) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points if x0 <= x <= x1)
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" '
                   'stroke-width="1.6" stroke-linejoin="round"/>')


def line_chart(path, series, title, x_label, y_label, markers=(), zoom_y=None, subtitle=""):
    """Writes an SVG with one line per series; series = [(name, [(x, y), ...]), ...].

    With zoom_y, a second panel repeats the chart with the y axis cut at zoom_y,
    so that small series stay readable next to a large one.
    """
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x_range = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y_max = max(ys) if ys else 1.0
    y_max = nice_step(y_max, 5) * (int(y_max / nice_step(y_max, 5)) + 1)
    width, panel_h = 900, 300
    panels = [(title, y_max, None)]
    if zoom_y:
        panels.append((f"{title}: y axis cut at {fmt(zoom_y)}", zoom_y,
                       f"values above {fmt(zoom_y)} drawn at the top edge"))
    height = 70 + len(panels) * (panel_h + 70) + 20 * ((len(series) + 2) // 3)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>']
    if subtitle:
        out.append(f'<text x="70" y="22" font-size="12" fill="#333333">{escape(subtitle)}</text>')
    top = 60
    for ptitle, pmax, note in panels:
        panel(out, series, (70, top, width - 100, panel_h), x_range, pmax, ptitle, x_label,
              y_label, markers, note)
        top += panel_h + 70
    # Legend, three entries a row.
    for i, (name, _) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        lx = 70 + (i % 3) * 260
        ly = top + 20 * (i // 3)
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 28}" y2="{ly - 4}" stroke="{colour}" '
                   'stroke-width="3"/>')
        out.append(f'<text x="{lx + 36}" y="{ly}" font-size="12">{escape(name)}</text>')
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
