"""Policy and spec files: JSON when the name ends in ``.json``, YAML otherwise."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from faultgate_stream.model.errors import InputError


def load_document(path: str | Path) -> Any:
    """The parsed document (``None`` for an empty YAML file). Raises ``InputError`` naming
    the file when it cannot be read or parsed."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{p}: cannot read ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text") from None
    if p.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as e:
            raise InputError(f"{p}: not valid JSON ({e})") from None
    import yaml  # only YAML files need it: a JSON policy, or none, loads without it

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(f"{p}: not valid YAML ({e})") from None
