"""What every config of the toolkit is: a strict pydantic model (`StrictConfig`), and
`parse`, which turns pydantic's report into one line naming the key and the file.

The network's shape (`agents.networks.NetConfig`), the training config's sections
(`training.config`) and the tournament's config (`evaluation.config.EvalConfig`) are
`StrictConfig`s: an unknown key or a wrongly typed value (a string for a number, a number
for true/false) is an error.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class StrictConfig(BaseModel):
    """A config section: unknown keys and wrongly typed values (a string for a number, a
    number for true/false) are errors; `parse` turns them into one line naming the key."""

    model_config = ConfigDict(extra="forbid", strict=True)


def parse(cls: type[BaseModel], data: Any, source: str | None = None):
    """`cls` validated from plain data (a YAML mapping); ValueError, one line naming the
    first bad key (and `source`, the file), in place of pydantic's report."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ValueError((f"{source}: " if source else "") + _one_line(cls, exc.errors()[0])) from None


_PHRASES = {"Input should be": "must be", "a valid integer": "an integer", "a valid boolean": "true or false",
            "a valid number": "a number", "a valid string": "a string", "a valid list": "a list",
            "greater than or equal to": ">=", "less than or equal to": "<=", "greater than": ">", "less than": "<",
            "String should have at least 1 character": "must not be empty"}


def _one_line(cls: type[BaseModel], error: dict) -> str:
    parts = [p for p in error["loc"] if p != "[key]"]  # a dict's bad key is named by the key itself
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")
    what = f"config key {key!r}" if key else "the config"
    if error["type"] == "value_error":  # a check of ours: its message names what is wrong
        text = str(error["ctx"]["error"])
        return f"config key {key!r}: {text}" if key else text
    if error["type"] == "extra_forbidden":
        for part in error["loc"][:-1]:  # the section holding the unknown key
            cls = cls.model_fields[part].annotation
        close = difflib.get_close_matches(str(error["loc"][-1]), list(cls.model_fields), n=1)
        return (f"unknown config key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                + f"; valid keys here: {', '.join(cls.model_fields)}")
    if error["type"] in ("model_type", "model_attributes_type"):
        return f"{what} must be a mapping of keys, got {error['input']!r}"
    text = error["msg"]
    for words, short in _PHRASES.items():
        text = text.replace(words, short)
    return f"{what} {text}, got {error['input']!r}"
