"""The `log-filter` world: the batch's lines and the verdicts on them.

    def filter(self, ctx: LogContext, lines: str) -> Verdicts
"""

from wit_world.imports.types import Action, LogContext, Verdicts as _Verdicts

__all__ = ["LogContext", "Verdicts", "lines"]


def lines(batch: str) -> list:
    """The lines of a batch, in order: one per line the gateway sent (a batch holds at
    least one; an empty item is an empty log line)."""
    return batch.split("\n")


class Verdicts:
    """One verdict per line of the batch, in order, collected into the compact shape the
    `filter` export answers (`done()`)."""

    def __init__(self) -> None:
        self.actions = []
        self.replacements = []

    def keep(self) -> None:
        self.actions.append(Action.KEEP)

    def drop(self) -> None:
        self.actions.append(Action.DROP)

    def replace(self, text: str) -> None:
        self.actions.append(Action.REPLACE)
        self.replacements.append(text)

    def done(self) -> _Verdicts:
        return _Verdicts(self.actions, self.replacements)
