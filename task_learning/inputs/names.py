"""Name matching shared by the CLI, the scenes and grounding.

Users name objects as ids, types or "<type> in|on <place>"; names match ignoring case and treating
'-', '_' and spaces alike, and CamelCase types ("DishRack") match their spoken form ("dish rack").
"""
from __future__ import annotations

import re

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s_\-]+")


def normalize_name(name: str) -> str:
    """'Dish_Rack', 'dish-rack', 'DishRack' and ' dish rack ' all become 'dish rack'."""
    spaced = _CAMEL.sub(" ", name.strip())
    return _SEPARATORS.sub(" ", spaced).strip().lower()
