"""Kubernetes resource quantities (the subset a pod spec uses), parsed to plain numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIX = {
    "": 1, "m": Decimal("0.001"),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+]?[0-9]+(\.[0-9]*)?|[+]?\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$")
GIB = 2**30


def parse(value: str | int | float) -> Decimal:
    """'100Gi' -> bytes, '500m' -> 0.5, 24 -> 24. ValueError if Kubernetes would reject it."""
    text = str(value).strip()
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 24, 500m, 100Gi, 32G)")
    number, suffix = m.group(1), m.group(3) or ""
    try:
        base = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"{value!r} is not a Kubernetes quantity") from None
    if suffix[:1] in ("e", "E"):
        return base * (Decimal(10) ** int(suffix[1:]))
    return base * Decimal(_SUFFIX[suffix])
