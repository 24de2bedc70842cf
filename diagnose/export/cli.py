"""`diagnose export`: the click command. pySigma is imported only when it runs (the `[export]` extra)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command("export")
@click.argument("rule_ids", nargs=-1)
@click.option("--to", "targets", multiple=True, type=click.Choice(["sigma", "loki", "lucene", "dsl"]),
              help="Query languages to write [default: sigma, loki, lucene].")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--field", default="message", show_default=True,
              help="Elasticsearch field holding the whole line (a keyword or wildcard field).")
@click.option("-o", "--output", type=click.Path(file_okay=False), help="Write one Sigma rule per file (<id>.yml) here.")
@click.option("--rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True), help="An extra directory of rules.")
def export_cmd(rule_ids: tuple[str, ...], targets: tuple[str, ...], fmt: str, field: str, output: str | None,
               extra_rules: tuple[str, ...]) -> None:
    """Compile the KB's line signals (of RULE_IDs, default all) to Sigma rules, LogQL and Lucene queries.

    What a query cannot express (the node's facts, weak signals, patterns the engines' regex lacks) is
    listed per rule: the alert fires on the line, the full diagnosis runs on the node or in `diagnose fleet`.
    """
    from diagnose import api

    try:
        from diagnose.export import backends, sigma
    except ImportError as e:
        raise click.ClickException(f"diagnose export needs pySigma: pip install 'diagnose[export]' ({e})") from None
    try:
        exported = sigma.export_all(api.load_kb(extra_rules), list(rule_ids) or None)
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    targets = targets or ("sigma", "loki", "lucene")
    rows = [{"rule_id": e.rule_id, **{t: backends.convert(e, t, field) for t in targets}, "left_out": e.left_out}
            for e in exported]
    if output:
        folder = Path(output)
        folder.mkdir(parents=True, exist_ok=True)
        for one in exported:
            if one.sigma:
                (folder / f"{one.rule_id}.yml").write_text(backends.to_yaml(one.sigma))
    if fmt == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    for row in rows:
        sys.stdout.write(f"== {row['rule_id']}\n")
        for t in targets:
            body = str(row[t] or "(none of its signals can be a query)")
            sys.stdout.write(f"-- {t}\n{body.rstrip()}\n")
        if row["left_out"]:
            sys.stdout.write("-- not in the query\n" + "".join(f"  {x}\n" for x in row["left_out"]))
        sys.stdout.write("\n")
