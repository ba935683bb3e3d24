"""Cluster and network settings: control plane, system pool, VPC and firewall opt-ins."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Literal, Optional

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components.model.capacity import machines
from components.model.capacity.rollout import DEFAULT_CONCURRENCY, MAX_CONCURRENCY
from components.model.common import (
    _GKE_VERSION,
    _NETWORK_REF,
    MAX_NODES_PER_POOL_ZONE,
    _dns_label,
    _Model,
    _network,
)
from components.model.workloads import inference_gateway

# --- cluster and network ---------------------------------------------------------------------


class ReleaseChannel(str, Enum):
    RAPID = "RAPID"
    REGULAR = "REGULAR"
    STABLE = "STABLE"
    EXTENDED = "EXTENDED"


class AuthorizedNetwork(_Model):
    cidr_block: str = Field(description="CIDR allowed to reach the control plane, e.g. 203.0.113.0/24.")
    display_name: str = Field(default="", max_length=100, pattern=r"^[ -~]*$", description="Label shown in the console (printable ASCII).")

    @field_validator("cidr_block")
    @classmethod
    def _cidr(cls, v: str) -> str:
        net = _network(v)
        if net.prefixlen == 0:
            # "All of the internet": the control plane would be open to anyone with credentials to try.
            raise ValueError(f"{v} is the whole internet; list the ranges that need the control plane (a VPN, a bastion, CI runners)")
        return v


class SystemPool(_Model):
    machine_type: str = Field(default="e2-standard-4", description="Machine type of the system pool (kube-system, JobSet controller).")
    min_nodes: int = Field(default=1, ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Autoscaler minimum.")
    max_nodes: int = Field(default=3, ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Autoscaler maximum.")

    @field_validator("machine_type")
    @classmethod
    def _machine(cls, v: str) -> str:
        machines.shape(v)  # MachineError (a ValueError) names what exists
        return v

    @model_validator(mode="after")
    def _range(self) -> "SystemPool":
        if self.max_nodes < self.min_nodes:
            raise ValueError(f"maxNodes {self.max_nodes} is below minNodes {self.min_nodes}; set maxNodes >= minNodes")
        return self


def _timestamp(v: str) -> datetime:
    try:
        t = datetime.fromisoformat(str(v).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{str(v)[:40]!r} is not an RFC 3339 time; use e.g. 2026-12-05T02:00:00Z") from None
    if t.tzinfo is None:
        raise ValueError(f"{v!r} has no time zone; end it with Z or an offset, e.g. 2026-12-05T02:00:00Z")
    return t


# GKE maintenance rules (GKE docs, "Maintenance windows and exclusions"; PLATFORM-FACTS §6): a recurring
# window (RFC 5545 RRULE) whose occurrences last at least 4 hours and which leaves at least 48 hours of
# availability in any 32-day period; at most 20 exclusions, unique by name; a "no upgrades" exclusion
# lasts at most 30 days, the "no minor (or node) upgrades" scopes at most until the end of support of
# the cluster's minor version. The provider refuses a maintenance policy without exactly one window
# (ExactlyOneOf daily/recurring window, terraform-provider-google resource_container_cluster.go), so the
# stack always sends one: weekend nights (UTC) unless the config gives another.
MIN_WINDOW_HOURS = 4
MIN_AVAILABILITY_HOURS_PER_32_DAYS = 48
MAX_NO_UPGRADES_DAYS = 30
DEFAULT_WINDOW = ("2026-01-03T02:00:00Z", "2026-01-03T10:00:00Z", "FREQ=WEEKLY;BYDAY=SA,SU")  # Saturday and Sunday 02:00-10:00 UTC
# End of standard support per minor (GKE release schedule, as published on endoflife.date
# google-kubernetes-engine): a "no minor upgrades" exclusion may not outlast its minor.
END_OF_STANDARD_SUPPORT = {"1.34": "2026-10-01T00:00:00Z", "1.35": "2027-04-11T00:00:00Z"}
# The minor each channel creates clusters at today (GKE release notes, "Current versions": default patch
# version for cluster creation, 2026-11: Rapid 1.36.4, Regular 1.35.7, Stable 1.35.6, Extended 1.35.7).
CHANNEL_DEFAULT_MINOR = {"RAPID": "1.36", "REGULAR": "1.35", "STABLE": "1.35", "EXTENDED": "1.35"}
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


def now() -> datetime:
    """The current time (UTC); one place, so tests can fix it."""
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Recurrence:
    freq: str
    days: tuple[str, ...] = ()  # BYDAY: MO..SU, monthly with an ordinal (1SA, -1SU)
    month_days: tuple[int, ...] = ()  # BYMONTHDAY

    def occurrences_per_32_days(self) -> int:
        """The fewest occurrences any 32-day period holds (a rolling window; conservative)."""
        if self.freq == "DAILY":
            return 31
        if self.freq == "WEEKLY":
            return 4 * len(self.days or ("SA",))  # 32 days hold every weekday at least 4 times
        # MONTHLY: each listed day at most once; a day past the 28th is missing in February
        return sum(1 for d in self.days) + sum(1 for d in self.month_days if 1 <= d <= 28 or -28 <= d <= -1)


def parse_rrule(v: str) -> Recurrence:
    """The RRULE subset GKE documents for maintenance windows: FREQ=DAILY|WEEKLY|MONTHLY with BYDAY
    (weekly: MO..SU; monthly: with an ordinal such as 1SA or -1SU) or BYMONTHDAY (monthly)."""
    bad = f"{v[:60]!r} is not an RRULE GKE takes; use e.g. FREQ=WEEKLY;BYDAY=SA,SU"
    parts: dict[str, str] = {}
    for part in v.split(";"):
        key, sep, value = part.partition("=")
        if not sep or not value or key in parts:
            raise ValueError(bad)
        parts[key] = value
    freq = parts.pop("FREQ", "")
    if freq not in ("DAILY", "WEEKLY", "MONTHLY"):
        raise ValueError(f"{bad} (FREQ must be DAILY, WEEKLY or MONTHLY)")
    days: tuple[str, ...] = ()
    month_days: tuple[int, ...] = ()
    if "BYDAY" in parts:
        days = tuple(parts.pop("BYDAY").split(","))
        ordinal = r"(?:-?[1-4])?" if freq == "MONTHLY" else ""
        for d in days:
            if not re.fullmatch(ordinal + "(MO|TU|WE|TH|FR|SA|SU)", d):
                raise ValueError(f"{v[:60]!r}: {d[:10]!r} is not a day; BYDAY takes {', '.join(_WEEKDAYS)}"
                                 + (" (monthly: with an ordinal, e.g. 1SA or -1SU)" if freq == "MONTHLY" else ""))
        if len(set(days)) != len(days):
            raise ValueError(f"{v[:60]!r}: BYDAY lists a day twice")
    if "BYMONTHDAY" in parts:
        if freq != "MONTHLY":
            raise ValueError(f"{v[:60]!r}: BYMONTHDAY needs FREQ=MONTHLY")
        try:
            month_days = tuple(int(d) for d in parts.pop("BYMONTHDAY").split(","))
        except ValueError:
            raise ValueError(f"{v[:60]!r}: BYMONTHDAY takes day numbers 1..31 or -31..-1") from None
        if any(not (1 <= abs(d) <= 31) for d in month_days):
            raise ValueError(f"{v[:60]!r}: BYMONTHDAY takes day numbers 1..31 or -31..-1")
    if parts:
        raise ValueError(f"{v[:60]!r}: {', '.join(sorted(parts))[:40]} not supported; use FREQ with BYDAY or BYMONTHDAY")
    if freq == "DAILY" and days:
        raise ValueError(f"{v[:60]!r}: a daily window takes no BYDAY; use FREQ=WEEKLY;BYDAY=...")
    if freq == "MONTHLY" and not (days or month_days):
        raise ValueError(f"{v[:60]!r}: a monthly window needs BYDAY (e.g. 1SA) or BYMONTHDAY")
    return Recurrence(freq, days, month_days)


class MaintenanceWindow(_Model):
    start_time: str = Field(default=DEFAULT_WINDOW[0], description="First window's start, RFC 3339 (e.g. 2026-12-05T02:00:00Z).")
    end_time: str = Field(default=DEFAULT_WINDOW[1], description="First window's end; the window repeats with recurrence.")
    recurrence: str = Field(default=DEFAULT_WINDOW[2], description="RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=SA,SU.")

    @field_validator("start_time", "end_time")
    @classmethod
    def _time(cls, v: str) -> str:
        _timestamp(v)
        return v

    @field_validator("recurrence")
    @classmethod
    def _rrule(cls, v: str) -> str:
        parse_rrule(v)
        return v

    @property
    def hours(self) -> float:
        return (_timestamp(self.end_time) - _timestamp(self.start_time)).total_seconds() / 3600

    @model_validator(mode="after")
    def _length(self) -> "MaintenanceWindow":
        if self.hours < MIN_WINDOW_HOURS:
            raise ValueError(f"window of {self.hours:g} h; GKE needs at least {MIN_WINDOW_HOURS} hours per occurrence")
        if self.hours > 24 * 7:
            raise ValueError(f"window of {self.hours:g} h; one occurrence may last at most a week")
        available = self.hours * parse_rrule(self.recurrence).occurrences_per_32_days()
        if available < MIN_AVAILABILITY_HOURS_PER_32_DAYS:
            raise ValueError(
                f"{self.recurrence} with {self.hours:g}-hour windows leaves GKE {available:g} hours in some 32-day period; "
                f"GKE requires at least {MIN_AVAILABILITY_HOURS_PER_32_DAYS} (e.g. FREQ=WEEKLY;BYDAY=SA,SU with 8-hour windows)"
            )
        return self


class MaintenanceExclusion(_Model):
    name: str = Field(description="Exclusion name, e.g. pretraining-q1.")
    start_time: str = Field(description="RFC 3339.")
    end_time: str = Field(description="RFC 3339; GKE requires an end.")
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = Field(
        default="NO_MINOR_OR_NODE_UPGRADES", description="What GKE may not do meanwhile; no node upgrades keeps TPU slices running.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 63)

    @field_validator("start_time", "end_time")
    @classmethod
    def _time(cls, v: str) -> str:
        _timestamp(v)
        return v

    @property
    def end(self) -> datetime:
        return _timestamp(self.end_time)

    @model_validator(mode="after")
    def _span(self) -> "MaintenanceExclusion":
        start, end = _timestamp(self.start_time), self.end
        if end <= start:
            raise ValueError(f"endTime {self.end_time} is not after startTime {self.start_time}")
        if self.scope == "NO_UPGRADES" and (end - start).total_seconds() > MAX_NO_UPGRADES_DAYS * 86400:
            raise ValueError(
                f"a NO_UPGRADES exclusion lasts at most {MAX_NO_UPGRADES_DAYS} days (GKE); this one lasts "
                f"{(end - start).total_seconds() / 86400:.2f}; use scope NO_MINOR_OR_NODE_UPGRADES for longer"
            )
        return self


class Maintenance(_Model):
    window: MaintenanceWindow = Field(default_factory=MaintenanceWindow, description=(
        "When GKE may upgrade and repair; default Saturday and Sunday 02:00-10:00 UTC."
    ))
    exclusions: list[MaintenanceExclusion] = Field(default_factory=list, max_length=20)

    @field_validator("exclusions")
    @classmethod
    def _unique(cls, v: list[MaintenanceExclusion]) -> list[MaintenanceExclusion]:
        seen: set[str] = set()
        for e in v:
            if e.name in seen:
                raise ValueError(f"exclusion name {e.name!r} is used twice; GKE keys exclusions by name")
            seen.add(e.name)
        return v


# Keys of a kubeconfig (Kubernetes "Organizing Cluster Access Using kubeconfig Files"; client-go's clientcmd
# api/v1 types): text holding one followed by ':' is a kubeconfig, in YAML or JSON, not a file's path.
_KUBECONFIG_CONTENTS = re.compile(
    r"(apiVersion|clusters|contexts|current-context|users|token|client-key-data|client-certificate-data|"
    r"certificate-authority-data|auth-provider|exec)\"?\s*:", re.IGNORECASE)


def looks_like_kubeconfig_contents(v: str) -> bool:
    """A kubeconfig's contents where a path belongs: several lines, a JSON object, or its keys."""
    return "\n" in v or v.lstrip().startswith(("{", "[")) or bool(_KUBECONFIG_CONTENTS.search(v))


class ExistingCluster(_Model):
    kubeconfig: str = Field(description=(
        "Path of a kubeconfig file for the cluster (relative to the project directory), e.g. ~/.kube/config."
    ))
    context: Optional[str] = Field(default=None, description="Context of that kubeconfig to use; default its current context.")

    @field_validator("kubeconfig", mode="before")
    @classmethod
    def _text(cls, v: object) -> object:
        # a kubeconfig pasted into the stack file as YAML arrives as a mapping: refused before the type check,
        # whose message would quote it
        if isinstance(v, (dict, list)):
            raise ValueError("is a kubeconfig's contents (with its credentials), not a path: give the path of the kubeconfig "
                             "file, e.g. ~/.kube/config, and keep its contents out of the stack file")
        return v

    @field_validator("kubeconfig")
    @classmethod
    def _path(cls, v: str) -> str:
        # Never quoted back: a kubeconfig's contents hold the cluster's credentials (a token, a client key), and a
        # message would put them in CI logs.
        if looks_like_kubeconfig_contents(v):
            raise ValueError("is a kubeconfig's contents (with its credentials), not a path: give the path of the kubeconfig "
                             "file, e.g. ~/.kube/config, and keep its contents out of the stack file")
        if not v or len(v) > 1024 or not v.isprintable():
            raise ValueError("is not a kubeconfig path (empty, over 1024 characters or not printable); give the path of the "
                             "kubeconfig file, e.g. ~/.kube/config")
        return v

    @field_validator("context")
    @classmethod
    def _context(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and (not v or len(v) > 253 or not v.isprintable()):
            raise ValueError(f"{v[:80]!r} is not a kubeconfig context name")
        return v


class ClusterConfig(_Model):
    existing: Optional[ExistingCluster] = Field(default=None, description=(
        "Deploy only the Kubernetes layer (controllers, namespaces, queues, guardrails, workloads) onto a cluster made "
        "elsewhere; no GCP resource is created. Its pools must carry the labels and taints this stack's pools would."
    ))
    name: Optional[str] = Field(default=None, description="GKE cluster name; default pathways-<stack>.")
    regional: bool = Field(default=False, description="Regional control plane (nodes stay in the stack's zone).")
    release_channel: ReleaseChannel = Field(default=ReleaseChannel.REGULAR, description="GKE release channel.")
    min_master_version: Optional[str] = Field(default=None, description=(
        "Lowest control-plane version: a minor (1.35) or a full version (1.35.1-gke.1234000). Default: none, "
        "the release channel picks a version GKE offers."
    ))
    private_nodes: bool = Field(default=True, description="Nodes without public IPs (they reach the internet through Cloud NAT).")
    public_endpoint: bool = Field(default=False, description=(
        "Let the internet reach the control plane's IP endpoint (limited by masterAuthorizedNetworks). "
        "Off: only the VPC reaches it; people and CI use the IAM-authorized DNS endpoint."
    ))
    master_authorized_networks: list[AuthorizedNetwork] = Field(default_factory=list, max_length=50)
    deletion_protection: Optional[bool] = Field(default=None, description="GKE deletion protection; default on.")
    system_pool: SystemPool = Field(default_factory=SystemPool)
    node_pool_concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1, le=MAX_CONCURRENCY, description=(
        "Node pool operations in flight at once (pools wait in lanes). Default 100, as Google's xpk creates pools; "
        "set 5 where GKE still enforces its 2023 quota of 5 concurrent operations (429 'concurrent operations quota')."
    ))
    maintenance: Maintenance = Field(default_factory=Maintenance)
    security_group: Optional[str] = Field(default=None, description=(
        "Google Groups for RBAC (GKE's authenticatorGroupsConfig): the group gke-security-groups@<your domain>, the "
        "name GKE requires, whose member groups RBAC may name. Without it GKE passes no group membership to RBAC, so "
        "a Google group listed in runs.submitters or a service's clients gets nothing. Changes in place."))

    @field_validator("security_group")
    @classmethod
    def _security_group(cls, v: Optional[str]) -> Optional[str]:
        # GKE: "the group must be named gke-security-groups" (Configure Google Groups for RBAC); pulumi-gcp's
        # authenticatorGroupsConfig.securityGroup: "in format gke-security-groups@yourdomain.com"
        if v is not None and (len(v) > 254 or not re.fullmatch(r"gke-security-groups@[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,24}", v)):
            raise ValueError(f"{v[:80]!r} is not GKE's security group; GKE requires gke-security-groups@<your domain> "
                             "(e.g. gke-security-groups@example.com)")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 40)

    @field_validator("min_master_version")
    @classmethod
    def _version(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not _GKE_VERSION.fullmatch(v):
            raise ValueError(f"{v!r} is not a GKE version; use e.g. 1.32 or 1.32.2-gke.1182000")
        return v


class NetworkConfig(_Model):
    existing_network: Optional[str] = Field(default=None, description="Use this VPC instead of creating one.")
    existing_subnetwork: Optional[str] = Field(default=None, description="Subnet of existingNetwork (with secondary ranges pods and services).")
    nodes_cidr: str = Field(default="10.0.0.0/20", description="Primary range of the created subnet.")
    pods_cidr: str = Field(default="10.4.0.0/14", description="Secondary range for pods.")
    services_cidr: str = Field(default="10.8.0.0/20", description="Secondary range for services.")
    proxy_only_cidr: str = Field(default=inference_gateway.DEFAULT_PROXY_ONLY_CIDR, description=(
        "The region's proxy-only subnet, where an inference gateway's load balancer runs its proxies (the firewall "
        "admits it to the serving leaders): created with this range in a created VPC when a serve workload has "
        "serve.gateway; on an existing network, the range of its own proxy-only subnet (one per region and VPC)."))
    # 8896 is the largest GCP MTU; multislice DCN traffic benefits from jumbo frames.
    mtu: int = Field(default=8896, ge=1300, le=8896, description="MTU of the created VPC.")
    cloud_nat: Optional[bool] = Field(default=None, description=(
        "Cloud Router + Cloud NAT for the nodes' egress; default on with private nodes in a created VPC "
        "(images outside Google's registries, e.g. registry.k8s.io for JobSet, need it)."
    ))
    pathways_client_ranges: list[str] = Field(default_factory=list, max_length=20, description=(
        "CIDRs besides the Pathways nodes allowed to reach the IFRT proxy port 29000 (opt-in; the proxy runs "
        "any program it is sent)."
    ))

    @field_validator("pathways_client_ranges")
    @classmethod
    def _client_ranges(cls, v: list[str]) -> list[str]:
        for cidr in v:
            if _network(cidr).prefixlen == 0:
                raise ValueError(f"{cidr} is the whole internet; list the ranges of the clients that need the proxy")
        return v

    @field_validator("nodes_cidr", "pods_cidr", "services_cidr", "proxy_only_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        net = _network(v)
        if net.version != 4:
            raise ValueError(f"{v} is not an IPv4 range; the subnet and its secondary ranges are IPv4")
        return v

    @field_validator("existing_network", "existing_subnetwork")
    @classmethod
    def _resource_name(cls, v: Optional[str]) -> Optional[str]:
        # A name, or a projects/.../networks|subnetworks/<name> path or URL, as the Compute API takes them.
        if v is not None and not _NETWORK_REF.fullmatch(v):
            raise ValueError(f"{v[:80]!r} is not a network or subnetwork name or projects/... path")
        return v

    @model_validator(mode="after")
    def _existing(self) -> "NetworkConfig":
        if (self.existing_network is None) != (self.existing_subnetwork is None):
            raise ValueError("set both existingNetwork and existingSubnetwork, or neither (a VPC is then created)")
        # The VPC API refuses a subnet whose primary and secondary ranges overlap.
        for i, (a, ra) in enumerate(self.named_ranges):
            for b, rb in self.named_ranges[i + 1:]:
                if _network(ra).overlaps(_network(rb)):
                    raise ValueError(f"{a} {ra} and {b} {rb} overlap; the three ranges must be disjoint")
        return self

    @property
    def named_ranges(self) -> tuple[tuple[str, str], ...]:
        """The created subnet's ranges by key (the proxy-only subnet's, made only for a gateway, is checked there)."""
        return (("nodesCidr", self.nodes_cidr), ("podsCidr", self.pods_cidr), ("servicesCidr", self.services_cidr))

    @property
    def create(self) -> bool:
        return self.existing_network is None



def gke_version_key(version: str) -> tuple[int, ...]:
    """'1.35' -> (1, 35); '1.35.1' -> (1, 35, 1); '1.35.1-gke.1234000' -> (1, 35, 1, 1234000)."""
    m = _GKE_VERSION.fullmatch(version)
    if not m:
        raise ValueError(f"{version!r} is not a GKE version")
    return tuple(int(g) for g in (m.group(1), m.group(2), m.group(4), m.group(6)) if g is not None)


def meets_gke_floor(version: str, floor: str) -> bool:
    """Whether GKE would run at least `floor` when asked for `version`.

    A minor (1.34) or patch (1.34.1) without a GKE build is fuzzy: GKE resolves it to a build it
    offers today, so only the components given are compared (1.34 meets 1.34.0-gke.2201000)."""
    v = gke_version_key(version)
    return v >= gke_version_key(floor)[: len(v)]
