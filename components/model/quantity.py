"""Kubernetes resource quantities (the subset a pod spec uses), parsed to plain numbers."""

from __future__ import annotations

import re
from decimal import Decimal

# Kubernetes' resource.Quantity suffixes (k8s.io/apimachinery/pkg/api/resource/quantity.go):
# decimal SI n u m "" k M G T P E, binary Ki..Ei, or a decimal exponent e<N>/E<N>.
_SUFFIX = {
    "": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("0.001"),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_QUANTITY = re.compile(r"([+]?[0-9]+(\.[0-9]*)?|[+]?\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,3})?")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]{1,3})")
GIB = 2**30


def parse(value: str | int | float) -> Decimal:
    """'100Gi' -> bytes, '500m' -> 0.5, 24 -> 24. ValueError if Kubernetes would reject it."""
    text = str(value).strip()
    m = _QUANTITY.fullmatch(text) if len(text) <= 64 else None
    if not m:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 24, 500m, 100Gi, 32G)")
    number, suffix = m.group(1), m.group(3) or ""
    base = Decimal(number)  # the regex admits only decimals
    exponent = _EXPONENT.fullmatch(suffix)
    if exponent:
        return base * (Decimal(10) ** int(exponent.group(1)))
    return base * Decimal(_SUFFIX[suffix])


_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def canonical(value: str | int) -> str:
    """A quantity as the API server stores it (k8s.io/apimachinery resource.Quantity CanonicalizeBytes): zero
    is "0"; a binary-suffixed value stays binary with the largest exact suffix unless it is under 1024 or not
    whole; decimal values take the largest exponent (a multiple of 3) that keeps the number whole. A stack
    that writes another form ("0Gi", "1000m") shows a change on every preview."""
    text = str(value).strip()
    amount = parse(text)
    if amount == 0:
        return "0"
    suffix = (_QUANTITY.fullmatch(text) or _QUANTITY.fullmatch("0")).group(3) or ""  # type: ignore[union-attr]
    if suffix in _BINARY[1:] and abs(amount) >= 1024 and amount == amount.to_integral_value():
        n, k = int(amount), 0
        while k < len(_BINARY) - 1 and n % 1024 == 0:
            n //= 1024
            k += 1
        return f"{n}{_BINARY[k]}"
    exponent = 0
    while amount != amount.to_integral_value():
        amount *= 1000
        exponent -= 3
    n = int(amount)
    while n % 1000 == 0 and exponent < 18:
        n //= 1000
        exponent += 3
    if _EXPONENT.fullmatch(suffix):
        return f"{n}e{exponent}" if exponent else str(n)
    return f"{n}{_DECIMAL[exponent]}"
