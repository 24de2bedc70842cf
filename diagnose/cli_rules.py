"""`diagnose rules ...`: the knowledge base's own tools (list, show, lint, test, docs, draft, schema)."""

from __future__ import annotations

import sys

import click

from diagnose.cli_conventions import complete_rule_ids
from diagnose.errors import EXIT_CLEAN, EXIT_FOUND, DiagnoseError


@click.group("rules")
def rules_cmd() -> None:
    """The knowledge base's own tools: list, show, lint, test, docs, schema."""


@rules_cmd.command("list")
@click.option("--rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True))
def rules_list(extra_rules: tuple[str, ...]) -> None:
    """Every rule: id, category, severity, title."""
    from diagnose import api

    kb = api.load_kb(extra_rules)
    width = max((len(r) for r in kb.rules), default=10)
    for rule in sorted(kb.rules.values(), key=lambda r: (r.category, r.id)):
        click.echo(f"{rule.id:<{width}}  {rule.category:<10}  {rule.severity:<8}  {rule.title}")
    click.echo(f"{len(kb.rules)} rules, kb {kb.version}")


@rules_cmd.command("show")
@click.argument("rule_id", shell_complete=lambda ctx, param, incomplete: complete_rule_ids(incomplete))
def rules_show(rule_id: str) -> None:
    """Print one rule's file."""
    from pathlib import Path

    from diagnose import api

    kb = api.load_kb()
    rule = kb.rules.get(rule_id)
    if rule is None:
        from rapidfuzz import process

        near = process.extractOne(rule_id, list(kb.rules))
        hint = f"; did you mean {near[0]}?" if near and near[1] > 60 else ""
        raise DiagnoseError(f"no rule {rule_id!r}{hint}")
    click.echo(Path(rule.path).read_text(encoding="utf-8"), nl=False)


@rules_cmd.command("lint")
@click.option("--rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True))
@click.option("--fixtures", "fixtures_dir", type=click.Path(file_okay=False, exists=True),
              help="Also diagnose these fixtures and flag rival findings (default: the checkout's fixtures/).")
@click.option("--no-fixtures", is_flag=True, help="Skip the fixture check (faster).")
def rules_lint(extra_rules: tuple[str, ...], fixtures_dir: str | None, no_fixtures: bool) -> None:
    """Check every rule: schema, regex safety, examples, explains targets and cycles, near-miss
    examples other rules match, and rival findings on fixtures."""
    from pathlib import Path

    from diagnose.kb import lint, loader

    dirs = [loader.default_rules_dir(), *(Path(p) for p in extra_rules)]
    issues = lint.lint(dirs)
    default_fixtures = dirs[0].parent / "fixtures"
    fixtures = Path(fixtures_dir) if fixtures_dir else (default_fixtures if default_fixtures.is_dir() else None)
    if fixtures is not None and not no_fixtures and not any(i.severity == "error" for i in issues):
        from diagnose import api
        from diagnose.kb.lint_cross import rival_findings

        issues.extend(rival_findings(fixtures, api.load_kb(extra_rules)))
    for issue in issues:
        click.echo(str(issue))
    n = len(loader.rule_paths(dirs))
    errors = sum(1 for i in issues if i.severity == "error")
    click.echo(f"{n} rules checked: {errors} error(s), {len(issues) - errors} warning(s)")
    sys.exit(EXIT_FOUND if errors else EXIT_CLEAN)


@rules_cmd.command("test")
@click.option("--fixtures", "fixtures_dir", type=click.Path(file_okay=False, exists=True),
              help="Fixture folders to run (default: the repository's fixtures/).")
@click.option("-k", "select", help="Only cases whose folder name contains this.")
@click.option("-v", "--verbose", is_flag=True, help="One line for every case, not only failures.")
@click.option("--calibration", "show_calibration", is_flag=True,
              help="Also print the reliability table and the Brier score of the confidences.")
def rules_test(fixtures_dir: str | None, select: str | None, verbose: bool, show_calibration: bool) -> None:
    """Run every rule example and fixture; print the confusion matrix and the rates."""
    from diagnose import api
    from diagnose.kb import selftest

    kb = api.load_kb()
    problems = selftest.example_problems(kb)
    for p in problems:
        click.echo(f"EXAMPLE FAIL {p}")
    root = _fixtures_root(fixtures_dir)
    cases = [c for c in selftest.find_cases(root) if not select or select in c.name]
    results = [selftest.run_case(c, kb) for c in cases]
    for r in results:
        if not r.ok or verbose:
            status = "ok  " if r.ok else "FAIL"
            click.echo(f"{status} {r.case.name}: " + ("; ".join(r.problems) or f"first {r.predicted}"))
    click.echo("")
    for line in selftest.confusion_lines(results, sorted(kb.rules) if not fixtures_dir and not select else None):
        click.echo(line)
    s = selftest.summary(results)
    click.echo("")
    click.echo(f"examples: {sum(len(r.examples['match']) + len(r.examples['no_match']) for r in kb.rules.values())} "
               f"run, {len(problems)} failed")
    if s["labelled"]:
        click.echo(f"labelled cases: {s['labelled']}; true cause first {s['top1']}/{s['labelled']} "
                   f"({s['top1'] / s['labelled']:.0%}), in top 3 {s['top3']}/{s['labelled']} ({s['top3'] / s['labelled']:.0%}), "
                   f"a wrong cause first {s['wrong_first']}/{s['labelled']}")
        if s["first_or_also"] != s["top1"]:
            click.echo(f"counting a case's `also:` id as right too: first {s['first_or_also']}/{s['labelled']} "
                       f"({s['first_or_also'] / s['labelled']:.0%})")
    click.echo(f"healthy cases: {s['healthy']}; with no finding {s['healthy_clean']}/{s['healthy']}")
    if show_calibration:
        cal = selftest.calibration(results)
        click.echo("")
        click.echo(f"calibration over {cal.predictions} reported findings (right = the case's true cause):")
        click.echo("  confidence   n   mean conf   right")
        for label, n, mean, right in cal.rows:
            click.echo(f"  {label:<9} {n:>4}   {mean:>9.2f}   {right:>5.0%}")
        click.echo(f"  Brier score: {cal.brier:.3f}")
    click.echo(f"{s['passed']} passed, {len(results) - s['passed'] + len(problems)} failed")
    sys.exit(EXIT_FOUND if problems or s["passed"] < len(results) else EXIT_CLEAN)


def _fixtures_root(given: str | None):  # type: ignore[no-untyped-def]
    from pathlib import Path

    from diagnose.kb import loader

    if given:
        return Path(given)
    candidate = loader.default_rules_dir().parent / "fixtures"
    if not candidate.is_dir():
        raise DiagnoseError("no fixtures/ next to the rules: pass --fixtures DIR")
    return candidate


@rules_cmd.command("docs")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Default: docs/rules in the repository.")
@click.option("--check", is_flag=True, help="Exit 1 when the pages differ from the rules, write nothing.")
def rules_docs(out_dir: str | None, check: bool) -> None:
    """Generate docs/rules/<id>.md and docs/root-causes.md from the rules (docs/catalog/*.md from rules/catalog/)."""
    from pathlib import Path

    from diagnose import api
    from diagnose.kb import catalog_docs, docs, loader

    kb = api.load_kb()
    rules_dir = loader.default_rules_dir()
    target = Path(out_dir) if out_dir else rules_dir.parent / "docs" / "rules"
    catalogs, causes = target.parent / "catalog", target.parent / "root-causes.md"
    if check:
        stale = [target / n for n in docs.drift(kb, rules_dir.parent, target)]
        stale += [catalogs / n for n in catalog_docs.drift(rules_dir, catalogs)]
        stale += [causes] if docs.root_causes_drift(kb, causes) else []
        for path in stale:
            click.echo(f"{path}: out of date; run `diagnose rules docs`")
        sys.exit(EXIT_FOUND if stale else EXIT_CLEAN)
    changed = docs.write(kb, rules_dir.parent, target)
    click.echo(f"{len(changed)} page(s) written to {target}")
    written = catalog_docs.write(rules_dir, catalogs)
    click.echo(f"{len(written)} page(s) written to {catalogs}")
    if docs.root_causes_drift(kb, causes):
        causes.write_text(docs.root_causes_page(kb), encoding="utf-8")
        click.echo(f"{causes} written")


@rules_cmd.command("draft")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--out", "out_dir", default="draft", show_default=True, type=click.Path(file_okay=False),
              help="Where the draft rule and fixture go.")
def rules_draft(inputs: tuple[str, ...], out_dir: str) -> None:
    """Draft a rule (and its fixture) from the first error no rule explains."""
    from pathlib import Path

    from diagnose import api
    from diagnose.kb import draft

    diagnosis = api.diagnose(list(inputs))
    for path in draft.draft(diagnosis, list(inputs), Path(out_dir)):
        click.echo(f"wrote {path}")
    click.echo("finish every TODO, then `diagnose rules lint --rules DIR` and `diagnose rules test`")


@rules_cmd.command("schema")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
def rules_schema(out: str | None) -> None:
    """The JSON Schema of a rule file, generated from the rule model."""
    import json

    from diagnose.kb.schema import Rule

    text = json.dumps(Rule.model_json_schema(), indent=2) + "\n"
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        click.echo(text, nl=False)
