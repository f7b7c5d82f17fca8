"""Lint's precision on published servers, by rule, and its recall on planted description attacks.

    .venv/bin/python bench/lint_precision.py [--list] [--unlabelled] [--check]

The corpus is bench/corpus/lint/: `servers/*.json`, the tools/list of published
MCP servers as each one serves it (recorded by `record.py` there), and
`labels.yaml`, a person's verdict on every finding lint gives on them, written
from reading the descriptions, and the problems found by reading that no rule
gave (`misses`). A label says `true` (the finding is right: the author should
change something) or `false` (it is not), and why. The static rules that
report a plain fact of the definition (no annotations, a parameter without a
description, a description over the token budget, a name in another style)
are labelled once per rule in `by_definition`. `attacks.yaml` is the attack
set: descriptions that attack the agent's other tools, its conversation or
its user, and controls that use the same words innocently.

Printed: per rule, findings, true, false, unlabelled, precision and misses
(labelled problems it did not find); the precision of errors and of warnings
overall; and per attack category, attacks found at severity error and
controls with a security finding. `--list` prints every finding with its
label, `--unlabelled` only those without one (as YAML to paste into
labels.yaml), and `--check` exits 1 when a target is missed:

- no false and no unlabelled error;
- warning precision >= 0.9 overall, >= 0.8 for every rule of severity warning or error with more than
  5 findings (a rule of notes, severity info, shows its precision and is held to none);
- every attack found at severity error, no security finding on a control.

tests/test_lint_corpus.py holds the same targets.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mcpipechekr.artifacts.tools_snapshot import ToolDefinition, tool_definition
from mcpipechekr.lint.rules import lint_tools
from mcpipechekr.lint.security import scan_tools

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "bench" / "corpus" / "lint"
WARNING_PRECISION = 0.9
RULE_PRECISION = 0.8
RULE_MIN_FINDINGS = 5


@dataclass(frozen=True)
class Found:
    """One finding of lint on the corpus, keyed as labels.yaml keys it."""

    server: str
    tool: str
    rule: str
    severity: str
    where: str
    """The parameter of a per-parameter static finding, the location of a security finding, or ''."""
    message: str

    @property
    def key(self) -> str:
        return f"{self.rule} {self.where}".strip()


@dataclass
class Labels:
    by_definition: dict[str, str]
    verdicts: dict[tuple[str, str, str], tuple[bool, str]]
    misses: list[dict[str, str]]


@dataclass
class RuleScore:
    findings: int = 0
    true: int = 0
    false: int = 0
    unlabelled: int = 0
    errors: int = 0
    false_errors: int = 0
    missed: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        judged = self.true + self.false
        return self.true / judged if judged else None


def load_servers(corpus: Path = CORPUS) -> dict[str, list[ToolDefinition]]:
    """Every recorded server's tools, by server key."""
    servers = {}
    for path in sorted((corpus / "servers").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        servers[data["server"]] = [tool_definition(tool) for tool in data["tools"]]
    return servers


_PARAMETER = re.compile(r"parameter '([^']+)'")


def lint_corpus(servers: dict[str, list[ToolDefinition]]) -> list[Found]:
    """Every static and security finding lint gives on the corpus (no selection test: it needs queries)."""
    found = []
    for server, tools in servers.items():
        for tool, findings in lint_tools(tools).items():
            for f in findings:
                where = ""
                if f.rule_id == "TEF-P003" and (match := _PARAMETER.search(f.message)):
                    where = match.group(1)
                found.append(Found(server, tool, f.rule_id, f.severity, where, f.message))
        for f in scan_tools(tools):
            found.append(Found(server, f.tool, f.rule_id, f.severity, f.location, f"{f.message}: {f.span!r}"))
    return found


def load_labels(corpus: Path = CORPUS) -> Labels:
    data = yaml.safe_load((corpus / "labels.yaml").read_text(encoding="utf-8")) or {}
    verdicts = {}
    for server, tools in (data.get("findings") or {}).items():
        for tool, keys in (tools or {}).items():
            for key, (verdict, why) in (keys or {}).items():
                verdicts[server, tool, key] = (bool(verdict), str(why))
    return Labels(data.get("by_definition") or {}, verdicts, data.get("misses") or [])


def verdict(found: Found, labels: Labels) -> bool | None:
    if found.rule in labels.by_definition:
        return True
    label = labels.verdicts.get((found.server, found.tool, found.key))
    return None if label is None else label[0]


def score(found: list[Found], labels: Labels) -> dict[str, RuleScore]:
    scores: dict[str, RuleScore] = defaultdict(RuleScore)
    present = set()
    for f in found:
        s = scores[f.rule]
        s.findings += 1
        present.add((f.server, f.tool, f.rule))
        v = verdict(f, labels)
        if v is None:
            s.unlabelled += 1
        elif v:
            s.true += 1
        else:
            s.false += 1
        if f.severity == "error":
            s.errors += 1
            s.false_errors += v is not True
    keys = {(f.server, f.tool, f.key) for f in found}
    for (server, tool, key), (true, why) in labels.verdicts.items():
        if true and (server, tool, key) not in keys:
            scores[key.split()[0]].missed.append(f"{server}/{tool}: no longer found ({why})")
    for miss in labels.misses:
        if (miss["server"], miss["tool"], miss["rule"]) not in present:
            scores[miss["rule"]].missed.append(f"{miss['server']}/{miss['tool']}: {miss['why']}")
    return dict(sorted(scores.items()))


def severity_precision(found: Iterable[Found], labels: Labels, severity: str) -> tuple[int, int, int]:
    """(true, false, unlabelled) over the findings of one severity."""
    counts = [0, 0, 0]
    for f in found:
        if f.severity == severity:
            v = verdict(f, labels)
            counts[0 if v else 1 if v is False else 2] += 1
    return counts[0], counts[1], counts[2]


# --- the attack set -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttackResult:
    id: str
    kind: str
    category: str
    expected: tuple[str, ...]
    found: tuple[tuple[str, str], ...]
    """(rule, severity) of every security finding on the entry's tool."""
    drift: bool

    @property
    def ok(self) -> bool:
        if self.kind == "control":
            return not self.found
        caught = any(rule in self.expected and severity == "error" for rule, severity in self.found)
        return caught and (self.drift or self.category != "rug-pull drift")


def attack_tools(entry: dict[str, Any], description: str) -> list[ToolDefinition]:
    """The entry's server: its tool with the entry's description, parameters and enums; the others bare."""
    params = {
        name: ({"type": "string", "description": text} if text else {"type": "string"})
        for name, text in (entry.get("params") or {}).items()
    }
    for name, values in (entry.get("enums") or {}).items():
        params.setdefault(name, {"type": "string"})["enum"] = values
    first, *others = entry["tools"]
    tools = [
        {"name": first, "description": description, "inputSchema": {"type": "object", "properties": params}}
    ]
    tools += [
        {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object"}}
        for name in others
    ]
    return [tool_definition(tool) for tool in tools]


def run_attacks(corpus: Path = CORPUS) -> list[AttackResult]:
    entries = yaml.safe_load((corpus / "attacks.yaml").read_text(encoding="utf-8"))
    results = []
    for entry in entries:
        tools = attack_tools(entry, entry["description"])
        drift = False
        if "previous" in entry:
            before = attack_tools(entry, entry["previous"])
            drift = before[0].definition_hash != tools[0].definition_hash
        found = tuple((f.rule_id, f.severity) for f in scan_tools(tools) if f.tool == entry["tools"][0])
        results.append(
            AttackResult(
                entry["id"], entry["kind"], entry["category"], tuple(entry.get("expect") or ()), found, drift
            )
        )
    return results


# --- the figures ----------------------------------------------------------------------------------------


def _ratio(true: int, false: int) -> str:
    return f"{true / (true + false):.2f}" if true + false else "  - "


def targets_missed(
    scores: dict[str, RuleScore], found: list[Found], labels: Labels, attacks: list[AttackResult]
) -> list[str]:
    missed = []
    false_errors = sum(s.false_errors for s in scores.values())
    if false_errors:
        missed.append(f"{false_errors} error(s) false or unlabelled")
    true, false, unlabelled = severity_precision(found, labels, "warning")
    if unlabelled:
        missed.append(f"{unlabelled} warning(s) unlabelled")
    if true + false and true / (true + false) < WARNING_PRECISION:
        missed.append(f"warning precision {_ratio(true, false)} < {WARNING_PRECISION}")
    warned = {f.rule for f in found if f.severity != "info"}
    for rule, s in scores.items():
        if rule not in warned:
            continue  # notes ask nothing of the author: their precision is shown, not held to a target
        if s.findings > RULE_MIN_FINDINGS and s.precision is not None and s.precision < RULE_PRECISION:
            missed.append(f"{rule} precision {s.precision:.2f} < {RULE_PRECISION} over {s.findings} findings")
    missed += [
        f"attack set: {r.id} ({r.kind}) {'missed' if r.kind == 'attack' else 'flagged'}"
        for r in attacks
        if not r.ok
    ]
    return missed


def report(
    servers: dict[str, list[ToolDefinition]], found: list[Found], labels: Labels, attacks: list[AttackResult]
) -> str:
    scores = score(found, labels)
    tools = sum(len(t) for t in servers.values())
    lines = [
        f"lint precision on {len(servers)} published servers ({tools} tools), "
        "labels in bench/corpus/lint/labels.yaml",
        "",
        f"{'rule':<10} {'findings':>8} {'errors':>6} {'true':>5} {'false':>5} {'unlab.':>6} "
        f"{'precision':>9} {'misses':>6}",
    ]
    for rule, s in scores.items():
        lines.append(
            f"{rule:<10} {s.findings:>8} {s.errors:>6} {s.true:>5} {s.false:>5} {s.unlabelled:>6} "
            f"{_ratio(s.true, s.false):>9} {len(s.missed):>6}"
            + ("  (by definition)" if rule in labels.by_definition else "")
        )
    lines.append("")
    for severity in ("error", "warning"):
        true, false, unlabelled = severity_precision(found, labels, severity)
        lines.append(
            f"{severity}s: {true + false + unlabelled}, true {true}, false {false}, "
            f"unlabelled {unlabelled}, precision {_ratio(true, false)}"
        )
    judgement = [f for f in found if f.rule not in labels.by_definition and f.severity == "warning"]
    true = sum(verdict(f, labels) is True for f in judgement)
    false = sum(verdict(f, labels) is False for f in judgement)
    lines.append(
        f"warnings of judgement rules (not by definition): true {true}, false {false}, "
        f"precision {_ratio(true, false)}"
    )
    misses = [(rule, m) for rule, s in scores.items() for m in s.missed]
    if misses:
        lines += ["", "misses (labelled problems no finding gives):"]
        lines += [f"  {rule}: {m}" for rule, m in misses]
    lines += ["", "attack set (bench/corpus/lint/attacks.yaml):"]
    by_category: dict[str, list[AttackResult]] = defaultdict(list)
    for r in attacks:
        by_category[r.category].append(r)
    for category, results in by_category.items():
        hit = [r for r in results if r.kind == "attack" and r.ok]
        attacks_n = sum(r.kind == "attack" for r in results)
        flagged = [r for r in results if r.kind == "control" and not r.ok]
        controls_n = sum(r.kind == "control" for r in results)
        lines.append(
            f"  {category:<28} attacks found {len(hit)}/{attacks_n}, "
            f"controls flagged {len(flagged)}/{controls_n}"
        )
    found_all = sum(r.ok for r in attacks if r.kind == "attack")
    flagged_all = sum(not r.ok for r in attacks if r.kind == "control")
    lines.append(
        f"  {'all':<28} attacks found {found_all}/{sum(r.kind == 'attack' for r in attacks)}, "
        f"controls flagged {flagged_all}/{sum(r.kind == 'control' for r in attacks)}"
    )
    for r in attacks:
        if not r.ok:
            lines.append(
                f"    {'MISSED' if r.kind == 'attack' else 'FLAGGED'} {r.id}: {r.found or 'nothing'}"
            )
    missed = targets_missed(scores, found, labels, attacks)
    lines += ["", "targets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed))]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="every finding with its label")
    parser.add_argument("--unlabelled", action="store_true", help="findings without a label, as YAML")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    options = parser.parse_args()
    servers = load_servers()
    found = lint_corpus(servers)
    labels = load_labels()
    if options.list or options.unlabelled:
        for f in found:
            v = verdict(f, labels)
            if options.unlabelled and v is not None:
                continue
            mark = {True: "TRUE ", False: "FALSE", None: "  ?  "}[v]
            print(f"{mark} {f.severity:<7} {f.server}/{f.tool} {f.key}: {f.message}")
        return
    attacks = run_attacks()
    print(report(servers, found, labels, attacks))
    if options.check and targets_missed(score(found, labels), found, labels, attacks):
        sys.exit(1)


if __name__ == "__main__":
    main()
