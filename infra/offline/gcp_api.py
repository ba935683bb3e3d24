"""The GCP half judged by Google's own API: every input the stack gives pulumi-gcp, against the API field it becomes
in Google's discovery documents (google.golang.org/api v0.316.0, pinned in tools/engines/gcp-apis and copied to
build/crds/gcp-api by `make crds`).

pulumi-gcp cannot run here, so a real `pulumi up` is the first to see a field GKE, Compute Engine or Cloud Storage
refuses. The documents are the APIs' own description: each field's type, format, enum values and pattern, and the
"Output only" mark of fields a client may not set. Per resource type, MAPPINGS says which API schema a Pulumi input
becomes (the provider's schema follows the API's names, with the exceptions written there); every input of every
registration must map (a new one fails tests/test_gcp_api.py until it is placed), and each value is checked:

- the field exists in the document;
- it is not output-only;
- a value within the field's enum ("" only where the enum has an *_UNSPECIFIED default: proto3 leaves it out);
- integers for int32/int64/uint32 fields, RFC 3339 times for google-datetime, "<n>s" for google-duration;
- the field's pattern, where the document gives one.

RULES are constraints the documents state in words, each with the sentence it comes from (the test checks the
sentence is in the pinned document, so a new revision that drops it shows)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from infra.offline.engine import Plan, Registration

ROOT = Path(__file__).resolve().parents[2]
DOCS_DIR = ROOT / "build" / "crds" / "gcp-api"
PROVIDER = "provider"
"""A Pulumi input that is no API field: the provider's own (deletionProtection, forceDestroy), or a part of the
request's URL (project, location, the parent's name) or query (the ID of a new resource)."""


@dataclass(frozen=True)
class Mapping:
    doc: str
    """The discovery document (container-api.json, ...)."""
    schema: str
    """The schema the resource's inputs become (Cluster, NodePool, Firewall, ...)."""
    paths: dict[str, str] = field(default_factory=dict)
    """Pulumi input path prefix -> API path prefix (dotted; [] for a list's items; {key} for a map's key), or
    PROVIDER. The longest prefix wins; an unlisted path is the API's own name."""
    values: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    """Pulumi input path -> the value the API receives, where the provider translates it."""


_URL = {"project": PROVIDER, "location": PROVIDER, "region": PROVIDER}
_IAM_MEMBER = Mapping("iam-api.json", "Binding", {**_URL, "bucket": PROVIDER, "serviceAccountId": PROVIDER, "cryptoKeyId": PROVIDER,
                                                  "member": "members[]"})

MAPPINGS: dict[str, Mapping] = {
    "gcp:container/cluster:Cluster": Mapping("container-api.json", "Cluster", {
        **_URL,
        "deletionProtection": PROVIDER, "removeDefaultNodePool": PROVIDER,
        # networkingMode VPC_NATIVE is the provider's name for ipAllocationPolicy.useIpAliases
        "networkingMode": "ipAllocationPolicy.useIpAliases",
        "datapathProvider": "networkConfig.datapathProvider",
        "dnsConfig": "networkConfig.dnsConfig",
        "gatewayApiConfig": "networkConfig.gatewayApiConfig",
        "enableShieldedNodes": "shieldedNodes.enabled",
        "nodeLocations": "locations",
        "minMasterVersion": "initialClusterVersion",
        "maintenancePolicy.recurringWindow.recurrence": "maintenancePolicy.window.recurringWindow.recurrence",
        "maintenancePolicy.recurringWindow": "maintenancePolicy.window.recurringWindow.window",
        "maintenancePolicy.maintenanceExclusions[].exclusionName": PROVIDER,  # the map's key
        "maintenancePolicy.maintenanceExclusions[].exclusionOptions": "maintenancePolicy.window.maintenanceExclusions.{key}.maintenanceExclusionOptions",
        "maintenancePolicy.maintenanceExclusions[]": "maintenancePolicy.window.maintenanceExclusions.{key}",
        "monitoringConfig.enableComponents": "monitoringConfig.componentConfig.enableComponents",
        "monitoringConfig.managedPrometheus": "monitoringConfig.managedPrometheusConfig",
            }, values={"networkingMode": lambda v: v == "VPC_NATIVE"}),
    "gcp:container/nodePool:NodePool": Mapping("container-api.json", "NodePool", {
        **_URL, "cluster": PROVIDER,
        "nodeCount": "initialNodeCount",  # the provider creates with it, then resizes (setSize) to it
        "maxPodsPerNode": "maxPodsConstraint.maxPodsPerNode",
        "nodeLocations": "locations",
        "nodeConfig": "config",
    }),
    "gcp:compute/resourcePolicy:ResourcePolicy": Mapping("compute-api.json", "ResourcePolicy", {**_URL}),
    "gcp:compute/firewall:Firewall": Mapping("compute-api.json", "Firewall", {
        **_URL, "allows[].protocol": "allowed[].IPProtocol", "allows[]": "allowed[]",
        "denies[].protocol": "denied[].IPProtocol", "denies[]": "denied[]"}),
    "gcp:compute/futureReservation:FutureReservation": Mapping("compute-api.json", "FutureReservation", {**_URL, "zone": PROVIDER}),
    "gcp:compute/regionSecurityPolicy:RegionSecurityPolicy": Mapping("compute-api.json", "SecurityPolicy", {**_URL}),
    "gcp:compute/network:Network": Mapping("compute-api.json", "Network", {**_URL, "routingMode": "routingConfig.routingMode"}),
    "gcp:compute/subnetwork:Subnetwork": Mapping("compute-api.json", "Subnetwork", {**_URL}),
    "gcp:compute/router:Router": Mapping("compute-api.json", "Router", {**_URL}),
    "gcp:compute/routerNat:RouterNat": Mapping("compute-api.json", "RouterNat", {
        **_URL, "router": PROVIDER, "subnetworks[].sourceIpRangesToNats": "subnetworks[].sourceIpRangesToNat"}),
    "gcp:storage/bucket:Bucket": Mapping("storage-api.json", "Bucket", {
        **_URL, "forceDestroy": PROVIDER,
        "uniformBucketLevelAccess": "iamConfiguration.uniformBucketLevelAccess.enabled",
        "publicAccessPrevention": "iamConfiguration.publicAccessPrevention",
        "lifecycleRules[].condition.matchesPrefixes": "lifecycle.rule[].condition.matchesPrefix",
        # with_state ANY/LIVE/ARCHIVED is the provider's name for isLive (unset/true/false)
        "lifecycleRules[].condition.withState": "lifecycle.rule[].condition.isLive",
        "lifecycleRules[]": "lifecycle.rule[]",
    }, values={"lifecycleRules[].condition.withState": lambda v: {"LIVE": True, "ARCHIVED": False}.get(v)}),
    "gcp:storage/bucketObject:BucketObject": Mapping("storage-api.json", "Object", {
        "bucket": PROVIDER, "content": PROVIDER, "source": PROVIDER}),  # the upload's media, not a field
    "gcp:storage/bucketIAMMember:BucketIAMMember": _IAM_MEMBER,
    "gcp:projects/iAMMember:IAMMember": _IAM_MEMBER,
    "gcp:serviceaccount/iAMMember:IAMMember": _IAM_MEMBER,
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": _IAM_MEMBER,
    "gcp:projects/iAMCustomRole:IAMCustomRole": Mapping("iam-api.json", "Role", {
        **_URL, "roleId": "CreateRoleRequest:roleId", "permissions": "includedPermissions"}),
    "gcp:serviceaccount/account:Account": Mapping("iam-api.json", "ServiceAccount", {
        **_URL, "accountId": "CreateServiceAccountRequest:accountId"}),
    "gcp:iam/workloadIdentityPool:WorkloadIdentityPool": Mapping("iam-api.json", "WorkloadIdentityPool", {
        **_URL, "workloadIdentityPoolId": PROVIDER}),  # the create call's query parameter
    "gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider": Mapping("iam-api.json", "WorkloadIdentityPoolProvider", {
        **_URL, "workloadIdentityPoolId": PROVIDER, "workloadIdentityPoolProviderId": PROVIDER}),
    "gcp:kms/keyRing:KeyRing": Mapping("cloudkms-api.json", "KeyRing", {**_URL, "name": PROVIDER}),  # keyRingId, a query parameter
    "gcp:kms/cryptoKey:CryptoKey": Mapping("cloudkms-api.json", "CryptoKey", {"keyRing": PROVIDER, "name": PROVIDER}),
    "gcp:projects/service:Service": Mapping("serviceusage-api.json", "GoogleApiServiceusageV1Service", {
        **_URL, "service": PROVIDER, "disableOnDestroy": PROVIDER}),  # enabled by a call on the service's name
    "gcp:monitoring/alertPolicy:AlertPolicy": Mapping("monitoring-api.json", "AlertPolicy", {**_URL}),
    "gcp:monitoring/dashboard:Dashboard": Mapping("monitoring-api.json", "Dashboard", {**_URL, "dashboardJson": PROVIDER}),
}


@lru_cache(maxsize=None)
def document(name: str) -> dict[str, Any]:
    path = DOCS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make crds` (Google's discovery documents from the pinned Go module)")
    return json.loads(path.read_text())


def revision(name: str) -> str:
    return str(document(name).get("revision", "?"))


@dataclass(frozen=True)
class Finding:
    resource: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.resource}: {self.path}: {self.message}"


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(Pulumi input path, leaf value); a list of objects is walked item by item ([] in the path), a list of scalars
    and a map's values are leaves of their own path (a map key stays in the path: labels.pathways/role)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for v in value:
            yield from _leaves(v, path + "[]")
    else:
        yield path, value


def _api_path(m: Mapping, path: str) -> Optional[str]:
    """The API path a Pulumi input path becomes, PROVIDER, or None when the map key of a {key} is the next part."""
    best = max((p for p in m.paths if path == p or path.startswith(p + ".") or path.startswith(p + "[")), key=len, default=None)
    if best is None:
        return path
    target = m.paths[best]
    return target if target == PROVIDER else target + path[len(best):]


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["schemas"][schema["$ref"]]
    return schema


def field_schema(doc_name: str, root: str, api_path: str) -> tuple[Optional[dict[str, Any]], str]:
    """The schema of the API field at `api_path` under `root` (Schema:path for another root), or None and why."""
    doc = document(doc_name)
    if ":" in api_path:
        root, api_path = api_path.split(":", 1)
    schema = _resolve(doc, doc["schemas"][root])
    parts = api_path.split(".")
    i = 0
    while i < len(parts):
        part = parts[i]
        name, items = (part[:-2], True) if part.endswith("[]") else (part, False)
        if name == "{key}":  # a map's entry whose key is no part of the Pulumi path (a list item's name field)
            schema = _resolve(doc, schema["additionalProperties"])
            i += 1
            continue
        if schema.get("additionalProperties") and name not in (schema.get("properties") or {}):
            # a map's key (labels.pathways/role, attributeMapping.google.subject): to a scalar value, the rest of the path
            schema = _resolve(doc, schema["additionalProperties"])
            i = len(parts) if schema.get("type") not in ("object", None) or "properties" not in schema else i + 1
            continue
        props = schema.get("properties") or {}
        if name not in props:
            return None, f"{schema.get('id', root)} has no field {name!r}"
        schema = _resolve(doc, props[name])
        if items:
            if schema.get("type") != "array":
                return None, f"{name} is not a list in the API"
            schema = _resolve(doc, schema["items"])
        i += 1
    return schema, ""


_OUTPUT_ONLY = re.compile(r"^\s*(\[Output Only\]|Output only\.)", re.IGNORECASE)
_DURATION = re.compile(r"-?[0-9]+(\.[0-9]{1,9})?s")


def _value_problems(doc: dict[str, Any], schema: dict[str, Any], value: Any) -> list[str]:
    out = []
    description = schema.get("description") or ""
    if schema.get("readOnly") or _OUTPUT_ONLY.match(description):
        out.append("output only in the API: a client may not set it")
    values = value if isinstance(value, list) and schema.get("type") == "array" else [value]
    item = _resolve(doc, schema.get("items") or {}) if schema.get("type") == "array" else schema
    for v in values:
        if v is None or isinstance(v, (dict, list)):
            continue  # an empty list of objects, or an object: its fields are leaves of their own
        enum = item.get("enum")
        if enum is not None and isinstance(v, str):
            if v == "":
                if not any(e.endswith("UNSPECIFIED") for e in enum):
                    out.append(f"'' where the API's enum has no unspecified default ({', '.join(enum[:8])})")
            elif v not in enum:
                out.append(f"{v!r} is not one of the API's values ({', '.join(enum[:12])}{' …' if len(enum) > 12 else ''})")
        fmt = item.get("format")
        if fmt in ("int32", "int64", "uint32", "uint64") and not (isinstance(v, int) and not isinstance(v, bool) or
                                                                   isinstance(v, str) and re.fullmatch(r"-?[0-9]+", v)):
            out.append(f"{v!r} is not an integer ({fmt})")
        if fmt == "google-datetime" and isinstance(v, str):
            try:
                datetime.fromisoformat(v.replace("Z", "+00:00"))
            except ValueError:
                out.append(f"{v!r} is not an RFC 3339 time")
        if fmt == "google-duration" and isinstance(v, str) and not _DURATION.fullmatch(v):
            out.append(f"{v!r} is not a duration (<seconds>s)")
        if item.get("type") == "boolean" and not isinstance(v, bool):
            out.append(f"{v!r} is not a boolean")
        pattern = item.get("pattern")
        if pattern and isinstance(v, str) and not re.fullmatch(pattern.strip("^$"), v):
            out.append(f"{v!r} does not match the API's pattern {pattern}")
    return out


def check_registration(r: Registration) -> list[Finding]:
    m = MAPPINGS.get(r.type)
    if m is None:
        return [Finding(r.name, "", f"{r.type} has no mapping to Google's API (infra/offline/gcp_api.py MAPPINGS)")]
    out = []
    for path, value in _leaves(r.inputs):
        target = _api_path(m, path)
        if target == PROVIDER:
            continue
        assert target is not None
        schema, why = field_schema(m.doc, m.schema, target)
        if schema is None:
            out.append(Finding(r.name, path, f"no API field ({why}; {m.doc} {m.schema}.{target})"))
            continue
        translate = m.values.get(path)
        out += [Finding(r.name, path, p) for p in _value_problems(document(m.doc), schema, translate(value) if translate else value)]
    return out


# --- constraints the documents state in words ---------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    name: str
    doc: str
    schema: str
    quote: str
    """The sentence in the document the rule encodes (tests/test_gcp_api.py checks it is there)."""
    check: Callable[[Plan], list[Finding]]


def _clusters(plan: Plan) -> list[Registration]:
    return plan.by_type("gcp:container/cluster:Cluster")


def _pools(plan: Plan) -> list[Registration]:
    return plan.by_type("gcp:container/nodePool:NodePool")


def _auto_upgrade_in_channel(plan: Plan) -> list[Finding]:
    out = []
    for c in _clusters(plan):
        if (c.input("releaseChannel.channel") or "UNSPECIFIED") == "UNSPECIFIED":
            continue
        out += [Finding(p.name, "management.autoUpgrade", f"false in a cluster of the {c.input('releaseChannel.channel')} "
                        "release channel, where node auto-upgrade cannot be disabled")
                for p in _pools(plan) if p.input("management.autoUpgrade") is False]
    return out


def _policy_in_pool_region(plan: Plan) -> list[Finding]:
    policies = {r.input("name"): r for r in plan.by_type("gcp:compute/resourcePolicy:ResourcePolicy")}
    out = []
    for p in _pools(plan):
        name = p.input("placementPolicy.policyName")
        if not name:
            continue
        policy = policies.get(name)
        location = str(p.input("location") or "")
        region = location if location.count("-") == 1 else location.rsplit("-", 1)[0]
        if policy is None:
            out.append(Finding(p.name, "placementPolicy.policyName", f"{name!r} is no resource policy of the stack"))
        elif policy.input("region") != region or policy.input("project") != p.input("project"):
            out.append(Finding(p.name, "placementPolicy.policyName", f"{name!r} is in {policy.input('project')}/"
                               f"{policy.input('region')}, the pool in {p.input('project')}/{region}"))
    return out


def _max_pods_needs_ip_aliases(plan: Plan) -> list[Finding]:
    aliased = all(c.input("networkingMode") == "VPC_NATIVE" for c in _clusters(plan))
    return [] if aliased else [Finding(p.name, "maxPodsPerNode", "set on a cluster without IP aliases (networkingMode VPC_NATIVE)")
                               for p in _pools(plan) if p.input("maxPodsPerNode") is not None]


RULES = (
    Rule("auto-upgrade in a release channel", "container-api.json", "ReleaseChannel",
         "Node auto-upgrade defaults to true and cannot be disabled.", _auto_upgrade_in_channel),
    Rule("a placement policy in the pool's project and region", "container-api.json", "PlacementPolicy",
         "The resource policy must be in the same project and region as the node pool.", _policy_in_pool_region),
    Rule("max pods per node needs IP aliases", "container-api.json", "Cluster",
         "Only honored if cluster created with IP Alias support.", _max_pods_needs_ip_aliases),
)


def check_plan(plan: Plan) -> list[Finding]:
    """Every GCP registration's inputs against the API, then RULES."""
    out = [f for r in plan.resources if r.custom and r.type.startswith("gcp:") for f in check_registration(r)]
    for rule in RULES:
        out += rule.check(plan)
    return out


def updatable_node_pool_fields() -> set[str]:
    """The NodePool fields some API call changes in place: UpdateNodePoolRequest's (with NodeConfig's that it carries
    at its top level), and the dedicated calls' (setAutoscaling, setManagement, setSize)."""
    doc = document("container-api.json")
    update = set(doc["schemas"]["UpdateNodePoolRequest"]["properties"])
    return update | {"autoscaling", "management", "initialNodeCount"}
