"""`diagnose fleet LAKE`: the click command. Ray is imported only when it runs (the `[fleet]` extra)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command("fleet")
@click.argument("lake", type=click.Path(file_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
@click.option("--address", help="An existing Ray cluster (ray://host:10001 or host:6379); default: start one here.")
@click.option("--workers", type=click.IntRange(min=1), help="Worker processes of the embedded cluster [default: all CPUs].")
@click.option("--per-node", "per_node", type=click.Path(file_okay=False), help="Also write each node's full diagnosis (JSON) into this folder.")
@click.option("--split-mb", type=click.FloatRange(min=1), default=256, show_default=True, help="Byte range size for large files.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True, help="Times Ray retries a task whose worker died.")
def fleet_cmd(lake: str, fmt: str, output: str | None, address: str | None, workers: int | None,
              per_node: str | None, split_mb: float, retries: int) -> None:
    """Diagnose a log lake laid out by node, LAKE/<node>/<source>.log[.gz] (and collect bundles), on Ray.

    \b
    diagnose fleet /data/logs/2026-12-01 --format markdown
    diagnose fleet LAKE --address head:6379 --per-node out/
    """
    try:
        from diagnose.fleet import render, runner
    except ImportError as e:
        raise click.ClickException(f"diagnose fleet needs Ray: pip install 'diagnose[fleet]' ({e})") from None
    try:
        report, results = runner.run(lake, address=address, workers=workers, keep_diagnoses=bool(per_node),
                                     split_bytes=int(split_mb * 2**20), retries=retries)
    except (OSError, ConnectionError, TimeoutError) as e:
        raise click.ClickException(str(e)) from None
    if per_node:
        folder = Path(per_node)
        folder.mkdir(parents=True, exist_ok=True)
        for r in results:
            body = r.pop("diagnosis", None) or json.dumps(r, indent=2)
            (folder / f"{r['node']}.json").write_text(body)
    text = render.render(report, fmt)
    if output:
        Path(output).write_text(text)
    else:
        sys.stdout.write(text)
    sys.exit(1 if report["causes"] or report["unreadable"] or report["failed"] else 0)
