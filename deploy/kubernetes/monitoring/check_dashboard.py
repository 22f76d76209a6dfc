#!/usr/bin/env python3
"""Checks the Grafana dashboard against what the executor really exports.

Usage: check_dashboard.py DASHBOARD.json METRICS.txt SCRAPE-CONFIG.yaml

METRICS.txt is a live scrape of the executor's GET /metrics (Prometheus text format). The
dashboard must be valid JSON shaped as Grafana imports it, take its data source from a
variable, and its PromQL (panel targets and variable queries) may name only metrics the scrape
exports (samples, or families announced by `# TYPE` that have no sample yet) and only labels
that the scrape carries or that the scrape configuration adds (its relabel target_labels).
Exit status 1 with one line per problem.
"""
import json
import re
import sys

import yaml

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def exported(metrics_text):
    """Sample names and label names of a Prometheus text exposition."""
    names, labels = set(), set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(None, 3)
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"],
                        "summary": ["_sum", "_count", ""]}.get(kind.strip(), [""])
            names.update(family + s for s in suffixes)
            if kind.strip() == "histogram":
                labels.add("le")
        elif line and not line.startswith("#"):
            match = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{([^}]*)\})?\s", line)
            if match:
                names.add(match.group(1))
                labels.update(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", match.group(3) or ""))
    return names, labels


def target_labels(scrape_config):
    """Labels a Prometheus scrape configuration adds to every series (relabel target_label)."""
    added = set()
    jobs = yaml.safe_load(scrape_config)
    for job in jobs if isinstance(jobs, list) else jobs.get("scrape_configs", []):
        for rule in job.get("relabel_configs", []):
            if rule.get("target_label") and not rule["target_label"].startswith("__"):
                added.add(rule["target_label"])
    return added | {"job", "instance"}


def promql_names(expr):
    """(metric names, label names) an expression refers to."""
    labels = set()
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    for block in re.findall(r"\{([^}]*)\}", text):
        labels.update(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", block))
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    for clause in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", text):
        labels.update(IDENT.findall(clause))
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", " ", text)
    metrics = set()
    for match in IDENT.finditer(text):
        word = match.group(0)
        if word in KEYWORDS or re.match(r"\s*\(", text[match.end():]):
            continue
        if match.start() > 0 and (text[match.start() - 1].isdigit() or text[match.start() - 1] == "."):
            continue  # the exponent or unit of a number
        metrics.add(word)
    return metrics, labels


def queries(dashboard):
    """Every PromQL expression of the dashboard, with where it is."""
    for panel in dashboard.get("panels", []):
        for inner in [panel] + panel.get("panels", []):
            for target in inner.get("targets", []):
                yield f"panel {inner.get('id')} ({inner.get('title')})", target.get("expr", "")
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        query = query.get("query", "") if isinstance(query, dict) else query or var.get("definition", "")
        match = re.fullmatch(r"\s*label_values\((?:(.*),)?\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", query)
        if match:
            yield f"variable {var['name']} (label)", "{%s=\"\"}" % match.group(2)
            if match.group(1):
                yield f"variable {var['name']}", match.group(1)
        else:
            yield f"variable {var['name']}", query


def main():
    dashboard_path, metrics_path, scrape_path = sys.argv[1:4]
    problems = []
    try:
        dashboard = json.load(open(dashboard_path, encoding="utf-8"))
    except ValueError as error:
        print(f"check_dashboard: {dashboard_path} is not JSON: {error}", file=sys.stderr)
        return 1
    names, labels = exported(open(metrics_path, encoding="utf-8").read())
    if not any(n.startswith("wasm_executor_") for n in names):
        problems.append(f"{metrics_path} is not a scrape of the executor (no wasm_executor_* metric)")
    labels |= target_labels(open(scrape_path, encoding="utf-8").read())

    for key in ("uid", "title", "panels", "schemaVersion"):
        if key not in dashboard:
            problems.append(f"the dashboard has no {key}")
    variables = dashboard.get("templating", {}).get("list", [])
    datasource_vars = [v["name"] for v in variables if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    if not datasource_vars:
        problems.append("no Prometheus data source variable")
    wanted_uid = "${%s}" % (datasource_vars[0] if datasource_vars else "datasource")
    ids = set()
    for panel in dashboard.get("panels", []):
        if panel.get("id") in ids:
            problems.append(f"panel id {panel.get('id')} used twice")
        ids.add(panel.get("id"))
        grid = panel.get("gridPos", {})
        if not grid or grid.get("x", 0) + grid.get("w", 0) > 24:
            problems.append(f"panel {panel.get('id')} has no gridPos within 24 columns")
        if panel.get("type") == "row":
            continue
        for holder in [panel] + panel.get("targets", []):
            if holder.get("datasource", {}).get("uid") != wanted_uid:
                problems.append(f"panel {panel.get('id')} ({panel.get('title')}) does not use the data source variable")
        if not panel.get("targets"):
            problems.append(f"panel {panel.get('id')} ({panel.get('title')}) has no query")

    used = set()
    for where, expr in queries(dashboard):
        if not expr.strip():
            problems.append(f"{where}: empty query")
            continue
        metrics, used_labels = promql_names(expr)
        used |= metrics
        for metric in sorted(metrics - names):
            problems.append(f"{where}: {metric} is not exported by the executor")
        for label in sorted(used_labels - labels):
            problems.append(f"{where}: label {label} is neither exported nor added by the scrape configuration")
    if not used:
        problems.append("the dashboard queries no metric")

    for problem in problems:
        print(f"check_dashboard: {problem}", file=sys.stderr)
    if not problems:
        print(f"check_dashboard: {len(ids)} panels; metrics used: {', '.join(sorted(used))}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
