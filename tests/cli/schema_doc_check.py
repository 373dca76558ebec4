#!/usr/bin/env python3
"""docs/database.md says what the schema is: its "Tables" and "Views" tables
must list exactly the tables, columns and views (with their columns) of a
live database, and the schema version it names must be the file's.
Also checks what every run records (tool_version, axioms_hash) and the
rule_constraints view.

    schema_doc_check.py DATABASE.db docs/database.md VERSION
"""
import re
import sqlite3
import sys


def doc_schema(path):
    """{table or view: set of columns} from the markdown tables, and the version named."""
    tables, views = {}, {}
    section = None
    current = None
    version = None
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        m = re.search(r"\(schema version (\d+)[;)]", line)
        if m and section == "Tables":
            version = int(m.group(1))
        if not line.startswith("| ") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if section == "Tables" and len(cells) == 4 and cells[0] != "table":
            if cells[0]:
                current = cells[0].strip("`")
                tables.setdefault(current, set())
            tables[current].update(re.findall(r"`([a-z_]+)`", cells[1]))
        elif section == "Views" and len(cells) == 2 and cells[0] != "view":
            name = cells[0].strip("`")
            # "`rule` (`source => target`)": the column names, not the explanations in parentheses
            columns = re.sub(r"\([^)]*\)", "", cells[1])
            views[name] = set(re.findall(r"`([a-z_]+)`", columns))
    return tables, views, version


def live_schema(db):
    tables, views = {}, {}
    for name, kind in db.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
                                 "AND name NOT LIKE 'sqlite_%'"):
        columns = {row[1] for row in db.execute(f"PRAGMA table_info('{name}')")}
        (tables if kind == "table" else views)[name] = columns
    return tables, views


def main():
    db_path, doc_path, version = sys.argv[1:4]
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    doc_tables, doc_views, doc_version = doc_schema(doc_path)
    live_tables, live_views = live_schema(db)
    problems = []
    for kind, doc, live in (("table", doc_tables, live_tables), ("view", doc_views, live_views)):
        for name in sorted(set(doc) | set(live)):
            if name not in live:
                problems.append(f"{doc_path} names the {kind} {name}, which the database lacks")
            elif name not in doc:
                problems.append(f"the {kind} {name} ({', '.join(sorted(live[name]))}) is missing from {doc_path}")
            elif doc[name] != live[name]:
                problems.append(f"{kind} {name}: {doc_path} lists {sorted(doc[name])}, the database has "
                                f"{sorted(live[name])}")
    file_version = int(db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    if doc_version != file_version:
        problems.append(f"{doc_path} says schema version {doc_version}, the database has {file_version}")

    # Every run records the program's version; verify runs the axioms' hash.
    runs = db.execute("SELECT id, kind, tool_version, axioms_hash FROM runs").fetchall()
    if not runs:
        problems.append("the database has no runs")
    for run_id, kind, tool_version, axioms_hash in runs:
        if tool_version != version:
            problems.append(f"run {run_id} ({kind}) records tool_version {tool_version!r}, not {version!r}")
        if kind == "verify" and not re.fullmatch(r"fnv1a64:[0-9a-f]{16}", axioms_hash or ""):
            problems.append(f"verify run {run_id} records axioms_hash {axioms_hash!r}")
    # rule_constraints: the JSON fields of rules.constraints as columns.
    n_rules = db.execute("SELECT count(*) FROM rules").fetchone()[0]
    n_view = db.execute("SELECT count(*) FROM rule_constraints").fetchone()[0]
    n_general = db.execute("SELECT count(*) FROM rules WHERE json_extract(constraints, '$.generalizes')").fetchone()[0]
    n_general_view = db.execute("SELECT count(*) FROM rule_constraints WHERE generalizes").fetchone()[0]
    if (n_rules, n_general) != (n_view, n_general_view):
        problems.append(f"rule_constraints: {n_view} rows, {n_general_view} generalize; rules: {n_rules}, {n_general}")

    for p in problems:
        print("FAIL: " + p)
    if problems:
        sys.exit(1)
    print(f"{doc_path} agrees with {db_path}: {len(live_tables)} tables, {len(live_views)} views, schema version "
          f"{file_version}; {len(runs)} runs record version {version}")


if __name__ == "__main__":
    main()
