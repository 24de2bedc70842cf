"""The fleet report as json, markdown or text."""

from __future__ import annotations

import json
from typing import Any

MAX_NODES_SHOWN = 20


def render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2) + "\n"
    md = fmt == "markdown"
    out = [f"{'# ' if md else ''}Fleet: {report['lake']} - {report['nodes']} nodes, "
           f"{report['bytes'] / 2**20:.1f} MiB, {len(report['causes'])} causes", ""]
    for c in report["causes"]:
        span = f"{c['first'] or '?'} .. {c['last'] or '?'}"
        head = f"{c['rule_id']} ({c['severity']}): {c['title']}"
        out.append(f"## {head}" if md else head)
        out.append(f"{'- ' if md else '  '}{len(c['nodes'])} nodes ({c['scope']}), {c['count']} lines, {span}")
        for node in c["nodes"][:MAX_NODES_SHOWN]:
            e = c["evidence"].get(node)
            quote = f"{e['source']}:{e['line']}: {e['text']}" if e else ""
            out.append(f"  - `{node}` `{quote}`" if md else f"    {node}  {quote}")
        if len(c["nodes"]) > MAX_NODES_SHOWN:
            out.append(f"{'  - ' if md else '    '}... and {len(c['nodes']) - MAX_NODES_SHOWN} more nodes")
        for other, nodes in sorted(c["co_occurs"].items()):
            out.append(f"{'- ' if md else '  '}with {other} on {len(nodes)} of its nodes in the same window")
        out.append("")
    for key, label in (("unreadable", "Unreadable nodes"), ("failed", "Nodes whose tasks kept failing")):
        if report[key]:
            out.append(f"## {label}" if md else f"{label}:")
            out.extend(f"{'- ' if md else '  '}{n['node']}: {n['reason']}" for n in report[key])
            out.append("")
    if report["skipped"]:
        out.append("## Files not read" if md else "Files not read:")
        out.extend(f"{'- ' if md else '  '}{node}: {src}: {why}" for node, items in report["skipped"].items()
                   for src, why in items)
        out.append("")
    out.append(f"{'- ' if md else ''}clean: {len(report['clean'])} nodes")
    return "\n".join(out) + "\n"
