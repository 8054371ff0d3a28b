"""The `table-formatter` world: the objects to print, and the table's columns and cells.

    def format(self, req: TableRequest) -> Optional[Table]
"""

import json

from wit_world.imports.types import (
    Cell_Boolean,
    Cell_Integer,
    Cell_None_,
    Cell_Number,
    Cell_Text,
    Column,
    ColumnType,
    Row,
    Table,
    TableRequest,
)

__all__ = ["Column", "ColumnType", "Row", "Table", "TableRequest", "cell", "column", "objects"]


def objects(req: TableRequest) -> list:
    """The objects to print: the request's JSON array (or a `List` object's `items`)."""
    parsed = json.loads(req.objects)
    if isinstance(parsed, dict):
        parsed = parsed.get("items") or []
    if not isinstance(parsed, list):
        raise ValueError("the objects are neither a JSON array nor a List")
    return parsed


def column(
    name: str,
    type: ColumnType = ColumnType.STRING,
    format: str = "",
    description: str = "",
    priority: int = 0,
) -> Column:
    """A column; priority 1 and up shows only with wide output."""
    return Column(name, type, format, description, priority)


def cell(value):
    """A cell from a Python value: str, bool, int, float, or None for an empty cell."""
    if value is None:
        return Cell_None_()
    if isinstance(value, bool):
        return Cell_Boolean(value)
    if isinstance(value, int):
        return Cell_Integer(value)
    if isinstance(value, float):
        return Cell_Number(value)
    return Cell_Text(str(value))


def row(*values) -> Row:
    """A row from Python values (see `cell`)."""
    return Row([cell(v) for v in values])
