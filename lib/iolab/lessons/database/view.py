"""Lesson 13's figure, and the front end's lines that carry each idea."""

import ast
from pathlib import Path

from IPython.display import Code

from iolab import figures, tables
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
         "front end's CPU a request (ms)", "others held the CPUs"],
        [[row["front_end"], row["driver"], row["at_once"], row["bottleneck"], row["predicted_rps"], row["rps"],
          row["front_cpu_ms"], others_held(row)] for row in rows])


def others_held(row):
    """The neighbours column: the share of the run other programs held this machine's CPUs (iolab.neighbours)."""
    found = row.get("neighbours")
    return f"{found['others_share']:.0%}" if found else "unknown"
