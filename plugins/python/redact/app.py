"""redact (Python): hides secrets in container logs and drops noisy lines.

The same plugin as the Rust `plugins/redact`, with the same config and answers:

    config = { patterns = ["password=\\\\S+", "Bearer [A-Za-z0-9._-]+"],
               drop = ["GET /healthz"], replacement = "***" }

A line matching any `drop` pattern is dropped; otherwise every match of every `patterns`
entry is replaced by `replacement` (`***` by default; `$1` and `${name}` in it stand for a
match's groups, counted across all patterns, as in the Rust plugin). Patterns use Python's
`re` syntax, which agrees with the Rust `regex` crate's on the usual classes, groups and
repetitions (`(?P<name>...)` for a named group).
"""

import re

from leafgate_plugin import config, log
from leafgate_plugin import log_filter as lf

CONFIG_KEYS = {"patterns", "drop", "replacement"}

# `$$`, `${name}` or `$name` in a replacement, as the Rust `regex` crate reads them.
_GROUP_REF = re.compile(r"\$(?:(\$)|\{([^}]*)\}|([_0-9A-Za-z]+))")


def _compile(patterns: list, which: str):
    """One regex matching any of `patterns`, or `None` for an empty list."""
    if not patterns:
        return None
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns))
    except re.error as e:
        raise ValueError(f"a `{which}` pattern is invalid: {e}") from None


class Redactor:
    def __init__(self, table: dict):
        unknown = set(table) - CONFIG_KEYS
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(sorted(unknown))}")
        self.drop = _compile(table.get("drop", []), "drop")
        self.secrets = _compile(table.get("patterns", []), "patterns")
        replacement = table.get("replacement", "***")
        self.replacement = replacement if "$" in replacement else None
        self.literal = replacement

    def _expand(self, match: re.Match) -> str:
        def group(ref: re.Match) -> str:
            if ref.group(1):
                return "$"
            name = ref.group(2) if ref.group(2) is not None else ref.group(3)
            try:
                value = match.group(int(name) if name.isdigit() else name)
            except IndexError:  # no such group: empty, as in Rust
                value = None
            return value or ""

        return _GROUP_REF.sub(group, self.replacement)

    def verdict(self, line: str, out: lf.Verdicts) -> None:
        if self.drop is not None and self.drop.search(line):
            out.drop()
            return
        if self.secrets is None:
            out.keep()
            return
        replaced, count = self.secrets.subn(
            self._expand if self.replacement is not None else lambda _m: self.literal, line
        )
        if count:
            out.replace(replaced)
        else:
            out.keep()


_redactor = None


def redactor() -> Redactor:
    global _redactor
    if _redactor is None:
        try:
            _redactor = Redactor(config())
        except ValueError as e:
            log.error(f"redact: {e}")
            raise ValueError(f"redact: {e}") from None
    return _redactor


class WitWorld:
    def filter(self, ctx: lf.LogContext, lines: str):
        r = redactor()
        out = lf.Verdicts()
        for line in lf.lines(lines):
            r.verdict(line, out)
        return out.done()
