"""Turns raw runs into medians, ratios and verdicts, and writes them as a table, JSON and PNG.

A run is a dict {"round", "broker", "workload", "metrics": {key: value}, "error": str|None}.
Figures are summarised per broker as median/min/max over rounds; the ratio column is always
kafkette's median divided by the peer's (so > 1 is better for throughput, worse for latency).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .metrics import CATALOGUE, median
from .targets import SUBJECT

Summary = dict[str, dict[str, dict[str, float]]]


def summarize(runs: list[dict]) -> Summary:
    """{broker: {metric: {"median", "min", "max", "n"}}} over every run that produced it."""
    values: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for key, value in run.get("metrics", {}).items():
            if value is not None and math.isfinite(value):
                values.setdefault(run["broker"], {}).setdefault(key, []).append(value)
    return {
        broker: {
            key: {"median": median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}
            for key, vals in metrics.items()
        }
        for broker, metrics in values.items()
    }


def medians(summary: Summary) -> dict[str, dict[str, float]]:
    return {
        broker: {key: stats["median"] for key, stats in metrics.items()}
        for broker, metrics in summary.items()
    }


def ratios(summary: Summary, peers: list[str]) -> dict[str, dict[str, float]]:
    """{peer: {metric: kafkette median / peer median}} where both exist."""
    mine = summary.get(SUBJECT, {})
    result: dict[str, dict[str, float]] = {}
    for peer in peers:
        theirs = summary.get(peer, {})
        result[peer] = {
            key: mine[key]["median"] / theirs[key]["median"]
            for key in mine
            if key in theirs and theirs[key]["median"]
        }
    return result


def fmt(value: float | None, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "rec/s":
        return f"{value:,.0f}"
    if unit == "ms":
        return f"{value:.2f}" if value < 100 else f"{value:,.0f}"
    if unit == "s":
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    if unit == "CPU s":
        return f"{value:.2f}"
    return f"{value:,.1f}"


def spread(stats: dict[str, float] | None) -> str:
    """(max - min) / median over the rounds, as a percentage; '-' for a single round."""
    if not stats or stats.get("n", 1) < 2 or not stats["median"]:
        return "-"
    return f"{100 * (stats['max'] - stats['min']) / abs(stats['median']):.0f}%"


def versus_table(summary: Summary, peer: str, labels: dict[str, str]) -> list[str]:
    """Markdown lines: figure | kafkette | peer | ratio | spread, for every figure both have.

    The shape of docs/performance.md's issue-16 table: medians over the alternating rounds,
    the ratio kafkette/peer, and each side's spread ((max - min) / median) beside it.
    """
    mine, theirs = summary.get(SUBJECT, {}), summary.get(peer, {})
    peer_label = labels.get(peer, peer)
    lines = [
        f"| figure | kafkette | {peer_label} | ratio | spread (kafkette / {peer_label}) |",
        "|---|---|---|---|---|",
    ]
    for key, metric in CATALOGUE.items():
        if key not in mine or key not in theirs:
            continue
        a, b = mine[key], theirs[key]
        ratio = f"{a['median'] / b['median']:.2f}x" if b["median"] else "-"
        lines.append(
            f"| {metric.label} ({metric.unit}) | {fmt(a['median'], metric.unit)} | "
            f"{fmt(b['median'], metric.unit)} | {ratio} | {spread(a)} / {spread(b)} |"
        )
    return lines if len(lines) > 2 else []


def table_rows(summary: Summary, brokers: list[str]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: metric, unit, better, one median per broker, kafkette/peer ratios, and
    each broker's spread over rounds ((max - min) / median)."""
    peers = [broker for broker in brokers if broker != SUBJECT]
    ratio_peers = peers if SUBJECT in brokers else []
    header = ["figure", "unit", "better", *brokers, *[f"kafkette/{peer}" for peer in ratio_peers],
              "spread " + " / ".join(brokers)]
    ratio_table = ratios(summary, ratio_peers)
    rows = []
    for key, metric in CATALOGUE.items():
        if not any(key in summary.get(broker, {}) for broker in brokers):
            continue
        row = [metric.label, metric.unit, "higher" if metric.higher_is_better else "lower"]
        for broker in brokers:
            stats = summary.get(broker, {}).get(key)
            row.append(fmt(stats["median"], metric.unit) if stats else "-")
        for peer in ratio_peers:
            ratio = ratio_table[peer].get(key)
            row.append(f"{ratio:.2f}x" if ratio is not None else "-")
        row.append(" / ".join(spread(summary.get(broker, {}).get(key)) for broker in brokers))
        rows.append(row)
    return header, rows


def markdown(
    summary: Summary, brokers: list[str], labels: dict[str, str], verdicts: list[dict],
    notes: list[str],
) -> str:
    """The results as Markdown (table, targets, notes), ready to paste into docs/performance.md."""
    header, rows = table_rows(summary, brokers)
    header = [labels.get(cell, cell) for cell in header]
    lines = []
    for peer in ("kafka", "tansu"):
        if SUBJECT in brokers and peer in brokers:
            versus = versus_table(summary, peer, labels)
            if versus:
                lines += [*versus, ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if verdicts:
        lines += ["", "| target | kafkette | status |", "|---|---|---|"]
    for verdict in verdicts:
        metric = CATALOGUE[verdict["metric"]]
        ratio = f" ({verdict['ratio']:.2f}x)" if "ratio" in verdict else ""
        lines.append(
            f"| {verdict['target']} | {fmt(verdict['kafkette'], metric.unit)}{ratio} "
            f"| {verdict['status']} |"
        )
    if notes:
        lines.append("")
        lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def print_report(
    console: object, summary: Summary, brokers: list[str], labels: dict[str, str],
    verdicts: list[dict], notes: list[str],
) -> None:
    """Render the table, the targets and the notes on a rich Console."""
    from rich.table import Table

    header, rows = table_rows(summary, brokers)
    table = Table(title="medians over rounds", show_lines=False)
    for index, cell in enumerate(header):
        table.add_column(labels.get(cell, cell), justify="left" if index < 3 else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    targets = Table(title="targets")
    for column in ("target", "kafkette", "status"):
        targets.add_column(column)
    for verdict in verdicts:
        metric = CATALOGUE[verdict["metric"]]
        ratio = f" ({verdict['ratio']:.2f}x)" if "ratio" in verdict else ""
        status = verdict["status"]
        style = "green" if status == "met" else "red" if status == "not met" else "dim"
        targets.add_row(
            verdict["target"], fmt(verdict["kafkette"], metric.unit) + ratio,
            f"[{style}]{status}[/{style}]",
        )
    if verdicts:
        console.print(targets)
    for note in notes:
        console.print(f"- {note}")


def write_json(path: Path, document: dict) -> None:
    def clean(value: object) -> object:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    path.write_text(json.dumps(clean(document), indent=2) + "\n")


def write_chart(path: Path, summary: Summary, brokers: list[str], labels: dict[str, str]) -> bool:
    """One small bar chart per figure (median, whiskers min..max), one bar per broker.

    Returns False (and writes nothing) when there is no figure to draw, or no matplotlib
    (the ``bench`` extra): the JSON and Markdown results are written before and stand alone.
    """
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [key for key in CATALOGUE if any(key in summary.get(b, {}) for b in brokers)]
    if not keys:
        return False
    columns = 4
    rows = math.ceil(len(keys) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 2.6 * rows), squeeze=False)
    colours = {"kafkette": "#2a7ab0", "tansu": "#d98c1f", "kafka": "#555555"}
    for axis, key in zip(axes.flat, keys, strict=False):
        metric = CATALOGUE[key]
        present = [broker for broker in brokers if key in summary.get(broker, {})]
        mids = [summary[b][key]["median"] for b in present]
        low = [mid - summary[b][key]["min"] for b, mid in zip(present, mids, strict=True)]
        high = [summary[b][key]["max"] - mid for b, mid in zip(present, mids, strict=True)]
        axis.bar(
            [labels.get(b, b) for b in present], mids, yerr=[low, high], capsize=3,
            color=[colours.get(b, "#888888") for b in present],
        )
        better = "higher" if metric.higher_is_better else "lower"
        axis.set_title(f"{metric.label}\n({metric.unit}, {better} is better)", fontsize=8)
        axis.tick_params(labelsize=7)
    for axis in list(axes.flat)[len(keys):]:
        axis.axis("off")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return True
