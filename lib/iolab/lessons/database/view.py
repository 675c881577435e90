"""Lesson 13's figure, and the front end's lines that carry each idea."""

import ast
from pathlib import Path

from IPython.display import Code
from matplotlib import patches

from iolab import figures, neighbours, tables
from iolab.servers import SERVERS_DIR


def throughputs(rows, title):
    """One pair of bars per row (`label`, `rps`, `predicted_rps`): measured beside the law's prediction, log scale."""
    figure, axes = figures.subplots(figsize=(9, 0.9 + 0.45 * len(rows)), dpi=80)
    labels = [row["label"] for row in rows]
    places = range(len(rows))
    axes.barh([p + 0.2 for p in places], [row["predicted_rps"] for row in rows], height=0.4, color="#bbbbbb",
              label="predicted by the bottleneck law")
    axes.barh([p - 0.2 for p in places], [row["rps"] for row in rows], height=0.4, color="#1f77b4",
              label="measured")
    for place, row in zip(places, rows):
        axes.text(row["rps"], place - 0.2, f" {row['rps']:.0f}", va="center", fontsize=8)
    axes.set_yticks(list(places), labels, fontsize=9)
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel("requests per second (log scale)")
    axes.legend(loc="lower right", fontsize=8)
    axes.set_title(title, loc="left", fontsize=10)
    figure.tight_layout()
    return figures.render(figure)


def method_source(module, cls, *methods):
    """servers/<module>.py's `cls.method`s alone, highlighted: the lines that carry the idea, not their hardening."""
    text = (Path(SERVERS_DIR) / f"{module}.py").read_text()
    lines = text.splitlines()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            parts = [lines[item.lineno - 1:item.end_lineno] for item in node.body if getattr(item, "name", None) in methods]
            body = "\n\n".join("\n".join(part) for part in parts)
            return Code(f"class {cls}:  # servers/{module}.py, in part\n{body}", language="python")
    raise ValueError(f"servers/{module}.py has no class {cls}")


def drivers_table(rows):
    """Section 1's table: each way's slots, its bottleneck, the prediction and the run."""
    return tables.markdown(
        ["front end", "how", "slots at once", "bottleneck (the law)", "predicted X (req/s)", "measured X (req/s)",
         "front end's CPU a request (ms)", neighbours.COLUMN],
        [[row["front_end"], row["driver"], row["at_once"], row["bottleneck"], row["predicted_rps"], row["rps"],
          row["front_cpu_ms"], others_held(row)] for row in rows])


def others_held(row):
    """The neighbours column: the share of the run other programs held this machine's CPUs (iolab.neighbours)."""
    return neighbours.held(row.get("neighbours"))


def tiers_picture(users, pool, max_connections, query_ms):
    """The tiers a request passes, left to right, each with how many it lets through at once: the picture before
    section 1's runs. The narrowest sets X = slots / Z (the bottleneck law)."""
    figure, axes = figures.subplots(figsize=(10, 2.4), dpi=80)
    boxes = [(f"N = {users} users\n(a closed loop)", "each waits for its answer"),
             ("the front end\n(one event loop)", "1 CPU: X ≤ 1 / D"),
             (f"the driver's slots\n(a pool: P = {pool})", f"each held Z = {query_ms} ms"),
             (f"PostgreSQL\nmax_connections\n= {max_connections}", "one backend process each")]
    for place, (name, note) in enumerate(boxes):
        x = place * 2.6
        axes.add_patch(patches.FancyBboxPatch((x, 0.3), 1.9, 1.1, boxstyle="round,pad=0.05", facecolor="#eef3fa",
                                              edgecolor="#1f77b4"))
        axes.text(x + 0.95, 0.95, name, ha="center", va="center", fontsize=9)
        axes.text(x + 0.95, 0.05, note, ha="center", va="center", fontsize=8, color="#555555")
        if place:
            axes.annotate("", (x - 0.05, 0.85), (x - 0.65, 0.85), arrowprops={"arrowstyle": "->"})
    axes.set_xlim(-0.2, 3 * 2.6 + 2.1)
    axes.set_ylim(-0.2, 1.6)
    axes.axis("off")
    axes.set_title("A request's path: the narrowest tier sets X = slots / Z", loc="left", fontsize=10)
    return figures.render(figure)
