"""How a CUDA version is named as a wheel variant: "12.8" -> "cu128". The one spelling of it: the torch
table's variant names (knowledge/schema.py), compat and the resolvers, and the lockfile reader's conda
builds all ask this."""

from __future__ import annotations

import re
from typing import Optional


def cuda_variant(cuda: str) -> Optional[str]:
    """The wheel variant that names a CUDA build: "12.8" -> "cu128", "13.0.2" -> "cu130"; None for "13"."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)*", str(cuda).strip())
    return f"cu{m.group(1)}{m.group(2)}" if m else None
