"""The SQL files of the orchestration migrations, one per migration and database vendor
(`<migration>.<vendor>.sql`): the change feed's triggers. A vendor without a file gets none."""
import re
from pathlib import Path

_DIRECTORY = Path(__file__).parent


def sql_file_migration(name: str):
    """RunPython functions that run the file `name` and undo it (the file's triggers and
    functions dropped)."""
    def forward(apps, schema_editor):
        _execute(schema_editor, _read(name, schema_editor))

    def backward(apps, schema_editor):
        sql = _read(name, schema_editor)
        drops = [f"DROP TRIGGER IF EXISTS {trigger}"
                 + (f" ON {table}" if schema_editor.connection.vendor == "postgresql" else "")
                 for trigger, table in re.findall(r"CREATE TRIGGER (\w+) AFTER [\w, ]+? ON (\w+)",
                                                  sql)]
        drops += [f"DROP FUNCTION IF EXISTS {function}()"
                  for function in re.findall(r"CREATE OR REPLACE FUNCTION (\w+)\(\)", sql)]
        _execute(schema_editor, ";\n".join(drops))

    return forward, backward


def _read(name: str, schema_editor) -> str:
    path = _DIRECTORY / f"{name}.{schema_editor.connection.vendor}.sql"
    return path.read_text() if path.exists() else ""


def _execute(schema_editor, sql: str) -> None:
    for statement in schema_editor.connection.ops.prepare_sql_script(sql):
        schema_editor.execute(statement, params=None)
