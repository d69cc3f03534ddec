"""The pandera bridge: public bounds, keys and null rules read from a data schema."""

from pandas_dp.schema.reader import (
    ColumnRules,
    SchemaRules,
    read_schema,
    rules_table,
    validate_sanitised,
)

__all__ = ["ColumnRules", "SchemaRules", "read_schema", "rules_table", "validate_sanitised"]
