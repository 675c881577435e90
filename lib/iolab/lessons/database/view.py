"""Lesson 13's figure: each way's throughput against its prediction."""

from iolab import figures


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
