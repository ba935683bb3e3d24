"""Readable preview of a recorded plan: the resource tree with key properties, and a summary."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .engine import Plan, Registration

# Per resource type, the inputs a reviewer looks at first (dotted paths into camelCased inputs).
KEY_INPUTS: dict[str, tuple[str, ...]] = {
    "gcp:compute/network:Network": ("name", "mtu", "autoCreateSubnetworks"),
    "gcp:compute/subnetwork:Subnetwork": ("name", "region", "ipCidrRange", "privateIpGoogleAccess"),
    "gcp:compute/resourcePolicy:ResourcePolicy": ("name", "region", "workloadPolicy"),
    "gcp:container/cluster:Cluster": (
        "name", "location", "nodeLocations", "releaseChannel.channel", "minMasterVersion",
        "deletionProtection", "datapathProvider", "dnsConfig.clusterDns",
        "privateClusterConfig.enablePrivateNodes", "privateClusterConfig.enablePrivateEndpoint", "maintenancePolicy",
    ),
    "gcp:container/nodePool:NodePool": (
        "name", "nodeLocations", "nodeCount", "initialNodeCount", "autoscaling", "nodeConfig.machineType",
        "nodeConfig.spot", "nodeConfig.reservationAffinity.values", "nodeConfig.flexStart",
        "placementPolicy", "nodeConfig.labels", "nodeConfig.taints",
    ),
    "gcp:serviceaccount/account:Account": ("accountId",),
    "gcp:projects/iAMMember:IAMMember": ("role", "member"),
    "gcp:projects/iAMCustomRole:IAMCustomRole": ("roleId", "permissions"),
    "gcp:storage/bucket:Bucket": (
        "name", "location", "uniformBucketLevelAccess", "publicAccessPrevention", "forceDestroy",
        "softDeletePolicy", "lifecycleRules",
    ),
    "gcp:storage/bucketIAMMember:BucketIAMMember": ("bucket", "role", "member"),
    "kubernetes:helm.sh/v3:Release": ("chart", "version", "namespace"),
    "gcp:monitoring/alertPolicy:AlertPolicy": ("displayName", "notificationChannels"),
    "gcp:compute/firewall:Firewall": ("name", "priority", "allows", "denies", "sourceRanges"),
    "gcp:compute/routerNat:RouterNat": ("name", "region"),
    "kubernetes:helm.sh/v4:Chart": ("chart", "version", "namespace"),
    "kubernetes:core/v1:Secret": ("metadata.name", "stringData"),
    "kubernetes:core/v1:Namespace": ("metadata.name",),
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet": ("metadata.name", "metadata.namespace"),
}


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _flags(r: Registration) -> str:
    o = r.options
    flags = []
    if o.get("protect"):
        flags.append("protect")
    if o.get("deleteBeforeReplace"):
        flags.append("delete-before-replace")
    if o.get("replaceOnChanges"):
        flags.append("replace-on:" + ",".join(o["replaceOnChanges"]))
    if o.get("ignoreChanges"):
        flags.append("ignore:" + ",".join(o["ignoreChanges"]))
    if o.get("customTimeouts"):
        flags.append("timeouts:" + ",".join(f"{k}={v}" for k, v in o["customTimeouts"].items()))
    return f"  [{'; '.join(flags)}]" if flags else ""


def _output_lines(value: Any, prefix: str = "", depth: int = 1) -> list[str]:
    """Every output leaf as `path: value`, never cut."""
    if isinstance(value, dict) and value:
        out = []
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            out += _output_lines(v, path, depth)
        return out
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return [f"{'  ' * depth}{prefix}: {text}"]


def render_text(plan: Plan, extra_sections: Sequence[str] = ()) -> str:
    children: dict[str, list[Registration]] = {}
    for r in plan.resources:
        children.setdefault(r.parent, []).append(r)
    lines = [f"Plan for stack {plan.stack!r} (offline, mock runtime: no cloud calls)", ""]

    def walk(parent: str, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda r: (r.type, r.name)):
            lines.append(f"{'  ' * depth}+ {r.type}  {r.name}{_flags(r)}")
            for path in KEY_INPUTS.get(r.type, ()):
                value = r.input(path)
                if value not in (None, [], {}, ""):
                    lines.append(f"{'  ' * depth}    {path}: {_short(value)}")
            walk(r.urn, depth + 1)

    roots = {r.parent for r in plan.resources} - {r.urn for r in plan.resources}
    for root in sorted(roots):
        walk(root, 0)
    counts = Counter(r.type for r in plan.resources if r.custom)
    lines += ["", f"Summary: {sum(counts.values())} resources to create"]
    lines += [f"  {n:4d}  {t}" for t, n in sorted(counts.items())]
    protected = sum(1 for r in plan.resources if r.options.get("protect"))
    lines.append(f"  protected: {protected}")
    lines += ["", "Outputs (in full: links and commands are meant to be pasted):"]
    lines += _output_lines(plan.outputs)
    for section in extra_sections:
        lines += ["", section]
    return "\n".join(lines) + "\n"
