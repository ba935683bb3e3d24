"""Lists a CRD declares unique, checked as the API server checks them (#76.2; pure). JSON Schema's validators do not
know Kubernetes' list extensions, so a rendered object with a repeated entry passed the schema layer and failed at
`pulumi up`:

- `x-kubernetes-list-type: set`: every item distinct (apiextensions-apiserver, structural schema validation
  "Duplicate value");
- `x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys`: one item per key tuple ("Duplicate value" on the
  keys);
- the CEL rule controller-gen writes for "unique" lists where the list stays atomic (Kueue v0.19.2's v1beta2
  MultiKueueConfig `spec.clusters`: `size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0`, message "must be
  unique"), evaluated here as the set rule it is.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

# The uniqueness idiom among x-kubernetes-validations rules, whitespace aside
_UNIQUE_RULE = re.compile(r"size\(self\.filter\((\w+),size\(self\.filter\((\w+),\2==\1\)\)>1\)\)==0")


def _unique_by_rule(schema: dict[str, Any]) -> bool:
    return any(_UNIQUE_RULE.fullmatch(re.sub(r"\s+", "", str(v.get("rule", "")))) for v in schema.get("x-kubernetes-validations") or [])


def _key(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def duplicates(value: Any, schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, str]]:
    """(path, message) for each repeated entry of a list the schema declares unique, anywhere under `value`."""
    if isinstance(value, list):
        list_type = schema.get("x-kubernetes-list-type")
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            if list_type == "map" and keys and isinstance(item, dict):
                k = _key([item.get(name) for name in keys])
                shown = ", ".join(f"{name}={item.get(name)!r}" for name in keys)
            elif list_type == "set" or _unique_by_rule(schema):
                k, shown = _key(item), repr(item)
            else:
                break
            if k in seen:
                yield f"{path}[{i}]", f"duplicate entry {shown} (also [{seen[k]}]); the CRD declares this list's entries unique"
            seen.setdefault(k, i)
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                yield from duplicates(item, items, f"{path}[{i}]")
    elif isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            child = props.get(key, extra if isinstance(extra, dict) else None)
            if isinstance(child, dict):
                yield from duplicates(sub, child, f"{path}.{key}" if path else key)
