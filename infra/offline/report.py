"""Readable preview of a recorded plan: the resource tree with key properties, and a summary."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from infra.offline.engine import Plan, Registration

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


# What the tree shows without --verbose: the inputs that say what a resource is.
ESSENTIAL_INPUTS: dict[str, tuple[str, ...]] = {
    "gcp:container/cluster:Cluster": ("location", "releaseChannel.channel", "minMasterVersion"),
    "gcp:container/nodePool:NodePool": ("nodeConfig.machineType", "nodeCount", "placementPolicy.tpuTopology", "nodeConfig.spot",
                                        "nodeConfig.flexStart", "nodeConfig.reservationAffinity.values"),
    "gcp:storage/bucket:Bucket": ("name", "location"),
    "gcp:compute/firewall:Firewall": ("priority", "allows", "denies"),
    "kubernetes:helm.sh/v4:Chart": ("chart", "version"),
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet": ("metadata.namespace",),
}


def _jobset_shape(r: Registration) -> str:
    """replicatedJobs as name x replicas (x pods), e.g. pathways-head x1, worker x4 (4 pods each)."""
    parts = []
    for job in r.input("spec.replicatedJobs") or []:
        pods = ((job.get("template") or {}).get("spec") or {}).get("parallelism") or 1
        parts.append(f"{job.get('name')} x{job.get('replicas', 1)}" + (f" ({pods} pods each)" if pods > 1 else ""))
    suspended = " (suspended)" if r.input("spec.suspend") else ""
    return ", ".join(parts) + suspended


def tree_lines(plan: Plan, verbose: bool = False) -> list[str]:
    """The resources grouped by component, with the inputs that matter (all key inputs with verbose)."""
    children: dict[str, list[Registration]] = {}
    for r in plan.resources:
        children.setdefault(r.parent, []).append(r)
    lines: list[str] = []
    shown = KEY_INPUTS if verbose else ESSENTIAL_INPUTS

    def walk(parent: str, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda r: (r.type, r.name)):
            kind = "" if r.custom else "  (component)"
            lines.append(f"{'  ' * depth}+ {r.type}  {r.name}{kind}{_flags(r)}")
            for path in shown.get(r.type, ()):
                value = r.input(path)
                if value not in (None, [], {}, ""):
                    lines.append(f"{'  ' * depth}    {path}: {_short(value)}")
            if r.type == "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet":
                lines.append(f"{'  ' * depth}    replicatedJobs: {_jobset_shape(r)}")
            walk(r.urn, depth + 1)

    roots = {r.parent for r in plan.resources} - {r.urn for r in plan.resources}
    for root in sorted(roots):
        walk(root, 0)
    return lines


def render_text(plan: Plan, summary: Sequence[str] = (), extra_sections: Sequence[str] = (), verbose: bool = False,
                verdict: str = "") -> str:
    """Summary first (what the stack holds, costs, and the outputs to paste), then the checks, then the tree."""
    lines = [f"Plan for stack {plan.stack!r} (offline, mock runtime: no cloud calls)", ""]
    lines += list(summary)
    lines += ["", "Outputs (in full: links and commands are meant to be pasted):"]
    lines += _output_lines(plan.outputs)
    for section in extra_sections:
        lines += ["", section]
    custom = [r for r in plan.resources if r.custom]
    counts = Counter(r.type for r in custom)
    components = len(plan.resources) - len(custom)
    lines += ["", f"Resources: {len(custom)} to create, grouped under {components} components "
                  f"(--json lists both: components have \"custom\": false){'' if verbose else '; --verbose shows all key inputs'}"]
    lines += tree_lines(plan, verbose)
    lines += ["", f"Resource counts: {sum(counts.values())} resources"]
    lines += [f"  {n:4d}  {t}" for t, n in sorted(counts.items())]
    protected = sum(1 for r in plan.resources if r.options.get("protect"))
    lines.append(f"  protected: {protected}")
    if verdict:
        lines += ["", verdict]  # last, where a reader (and a CI log) ends
    return "\n".join(lines) + "\n"
