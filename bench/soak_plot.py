"""Plots bench/soak.sh's samples: soak_plot.py SOAK_CSV OUT_PNG.

Four panels over time: leafgate's RSS; its open descriptors and tokio tasks; open
sessions, connections and upgraded connections; the load's failures by cause. The load's
end is marked.
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
t = [float(r["t_s"]) / 60 for r in rows]
col = lambda name: [float(r[name]) for r in rows]  # noqa: E731
load_end = max((x for x, r in zip(t, rows) if r["phase"] == "load"), default=None)

fig, axes = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
panels = [
    ("RSS (MiB)", [("rss", [v / 1024 for v in col("rss_kib")])]),
    ("descriptors, tasks", [("open descriptors", col("fds")), ("tokio tasks", col("tokio_tasks"))]),
    (
        "sessions, connections",
        [("open sessions", col("open_sessions")), ("client connections", col("connections")), ("upgraded", col("upgraded"))],
    ),
    (
        "failures (cumulative)",
        [("plugin refusals (injected)", col("plugin_faults")), ("overlapping a leaf restart", col("restart_faults")), ("unexpected", col("unexpected"))],
    ),
]
for ax, (title, series) in zip(axes, panels):
    for label, values in series:
        ax.plot(t, values, label=label, marker=".", linewidth=1)
    ax.set_ylabel(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    if load_end is not None:
        ax.axvline(load_end, color="grey", linestyle="--", linewidth=0.8)
axes[-1].set_xlabel("minutes (dashed: the load stops)")
fig.suptitle("leafgate soak (bench/soak.sh)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=90)
