"""Which module builds a provider that lives outside `llm/`, by name.

`llm/` is infrastructure: it knows the provider contract (base.py) and the providers that talk to
a model (openai, local) or a recording (replay), but not the offline stand-in, which sits above
the methods whose prompts it answers (task_learning/offline_model/). An entry here names the
class by module path, imported only when a client asks for it, so no static import runs from
`llm/` up to the stand-in and the other providers work without it.
"""
from __future__ import annotations

import importlib
from typing import Any

from task_learning.errors import ConfigError

# name -> "module:attribute" of a provider class (keyword options from llm.yaml's section of that name)
PROVIDERS: dict[str, str] = {
    "offline": "task_learning.offline_model:OfflineProvider",
}


def provider_class(name: str) -> Any:
    """The provider class registered under `name`; ConfigError when it is unknown or cannot load."""
    target = PROVIDERS.get(name)
    if target is None:
        raise ConfigError(None, "llm", f"no provider registered as {name!r} (registered: {', '.join(PROVIDERS)})")
    module_name, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(None, "llm", f"the {name} provider is not available: {exc}") from None
