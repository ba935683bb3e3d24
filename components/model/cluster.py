"""Cluster and network settings: control plane, system pool, VPC and firewall opt-ins."""

from __future__ import annotations

import re
from datetime import datetime
from enum import Enum
from typing import Literal, Optional

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from . import machines
from .common import (
    _GKE_VERSION,
    _NETWORK_REF,
    MAX_NODES_PER_POOL_ZONE,
    _dns_label,
    _Model,
    _network,
)
from .rollout import GKE_CONCURRENT_OPERATIONS

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


# GKE maintenance rules (GKE docs, "Maintenance windows and exclusions"): a recurring window of at least
# 4 hours per occurrence (RFC 5545 RRULE); a "no upgrades" exclusion lasts at most 30 days, the
# "no minor (or node) upgrades" scopes until the end of the minor's support (checked by GKE itself).
MIN_WINDOW_HOURS = 4
MAX_NO_UPGRADES_DAYS = 30


class MaintenanceWindow(_Model):
    start_time: str = Field(description="First window's start, RFC 3339 (e.g. 2026-12-05T02:00:00Z).")
    end_time: str = Field(description="First window's end; the window repeats with recurrence.")
    recurrence: str = Field(default="FREQ=WEEKLY;BYDAY=SA,SU", description="RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=SA,SU.")

    @field_validator("start_time", "end_time")
    @classmethod
    def _time(cls, v: str) -> str:
        _timestamp(v)
        return v

    @field_validator("recurrence")
    @classmethod
    def _rrule(cls, v: str) -> str:
        if not re.fullmatch(r"FREQ=(DAILY|WEEKLY|MONTHLY)(;[A-Z]+=[A-Z0-9,+-]+){0,5}", v):
            raise ValueError(f"{v[:60]!r} is not an RRULE GKE takes; use e.g. FREQ=WEEKLY;BYDAY=SA,SU")
        return v

    @model_validator(mode="after")
    def _length(self) -> "MaintenanceWindow":
        hours = (_timestamp(self.end_time) - _timestamp(self.start_time)).total_seconds() / 3600
        if hours < MIN_WINDOW_HOURS:
            raise ValueError(f"window of {hours:g} h; GKE needs at least {MIN_WINDOW_HOURS} hours per occurrence")
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

    @model_validator(mode="after")
    def _span(self) -> "MaintenanceExclusion":
        start, end = _timestamp(self.start_time), _timestamp(self.end_time)
        if end <= start:
            raise ValueError(f"endTime {self.end_time} is not after startTime {self.start_time}")
        if self.scope == "NO_UPGRADES" and (end - start).days > MAX_NO_UPGRADES_DAYS:
            raise ValueError(
                f"a NO_UPGRADES exclusion lasts at most {MAX_NO_UPGRADES_DAYS} days (GKE); use scope NO_MINOR_OR_NODE_UPGRADES for longer"
            )
        return self


class Maintenance(_Model):
    window: Optional[MaintenanceWindow] = Field(default=None, description="When GKE may upgrade and repair.")
    exclusions: list[MaintenanceExclusion] = Field(default_factory=list, max_length=20)


class ClusterConfig(_Model):
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
    node_pool_concurrency: int = Field(default=GKE_CONCURRENT_OPERATIONS, ge=1, le=50, description=(
        "Node pool operations in flight at once (pools wait in lanes). Default: GKE's concurrent-operations "
        "quota per cluster, 5; raise it only if Google raised yours."
    ))
    maintenance: Maintenance = Field(default_factory=Maintenance)

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

    @field_validator("nodes_cidr", "pods_cidr", "services_cidr")
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
        named = (("nodesCidr", self.nodes_cidr), ("podsCidr", self.pods_cidr), ("servicesCidr", self.services_cidr))
        for i, (a, ra) in enumerate(named):
            for b, rb in named[i + 1:]:
                if _network(ra).overlaps(_network(rb)):
                    raise ValueError(f"{a} {ra} and {b} {rb} overlap; the three ranges must be disjoint")
        return self

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
