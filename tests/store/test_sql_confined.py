"""All SQL of the host lives in ``ishiki_host/store/``: nothing else imports sqlite3 or holds SQL strings."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import ishiki_host

PACKAGE = Path(ishiki_host.__file__).parent
STORE = PACKAGE / "store"
SQL = re.compile(
    r"\b(SELECT\b[\s\S]+?\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|TRIGGER|VIEW|"
    r"VIRTUAL\s+TABLE)|DROP\s+(TABLE|INDEX)|ALTER\s+TABLE|PRAGMA\s+\w+|BEGIN\s+(IMMEDIATE|EXCLUSIVE)|ROLLBACK)\b"
)


def _findings(path: Path) -> list[str]:
    """SQL-looking string constants and sqlite3 imports of one module, as ``file:line: what``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            found.append(f"{path}:{node.lineno}: SQL in a string: {node.value.strip()[:60]!r}")
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "sqlite3" for a in node.names):
            found.append(f"{path}:{node.lineno}: imports sqlite3")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3":
            found.append(f"{path}:{node.lineno}: imports from sqlite3")
    return found


def test_no_sql_outside_the_store_package() -> None:
    outside = [p for p in PACKAGE.rglob("*.py") if STORE not in p.parents]
    assert outside, "the scan found no modules to check"
    assert [finding for path in outside for finding in _findings(path)] == []


def test_the_scan_does_find_the_sql_inside_it() -> None:
    """A scan that finds nothing anywhere proves nothing: it must see the repositories' SQL."""
    inside = {path.name: _findings(path) for path in STORE.rglob("*.py")}
    for name in ("memories.py", "sessions.py", "heartbeats.py", "schema_v1.py", "db.py", "plugin_settings.py"):
        assert inside[name], name
