"""What every world's plugin uses: its config, the host log, and glob patterns."""

import json

from wit_world.imports import host

_config = None


def config_json() -> str:
    """The plugin's `config = { ... }` table, as JSON text exactly as the gateway passes it."""
    return host.config()


def config() -> dict:
    """The plugin's config as a dict, parsed on first use and kept: the gateway keeps warm
    instances, so what a plugin builds from it serves many calls. A config that is not a
    JSON object raises `ValueError` (the call fails, and says why)."""
    global _config
    if _config is None:
        parsed = json.loads(config_json())
        if not isinstance(parsed, dict):
            raise ValueError(f"the plugin config is not a table: {parsed!r}")
        _config = parsed
    return _config


class log:
    """Structured logging into the gateway's tracing, tagged there with tenant and plugin."""

    @staticmethod
    def trace(message: str) -> None:
        host.log(host.Level.TRACE, message)

    @staticmethod
    def debug(message: str) -> None:
        host.log(host.Level.DEBUG, message)

    @staticmethod
    def info(message: str) -> None:
        host.log(host.Level.INFO, message)

    @staticmethod
    def warn(message: str) -> None:
        host.log(host.Level.WARN, message)

    @staticmethod
    def error(message: str) -> None:
        host.log(host.Level.ERROR, message)


def glob_match(pattern: str, text: str) -> bool:
    """Matches `text` against a glob where `*` stands for any run of characters
    (`edge-*`, `*-prod`, `team-*-db`), as the Rust SDK's `glob_match` does."""
    if "*" not in pattern:
        return pattern == text
    first, rest = pattern.split("*", 1)
    middles, _, last = rest.rpartition("*")
    if (
        len(text) < len(first) + len(last)
        or not text.startswith(first)
        or not text.endswith(last)
    ):
        return False
    between = text[len(first) : len(text) - len(last)]
    for middle in middles.split("*") if middles else []:
        at = between.find(middle)
        if at < 0:
            return False
        between = between[at + len(middle) :]
    return True


def entries(text: str) -> list:
    """The entries of a `\\n`-joined list of a request; none for `""`."""
    return text.split("\n") if text else []
