"""What every part of the config model shares: the base model, name and range checks, platform bounds."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
)
from pydantic.alias_generators import to_camel

PROJECT_NAMESPACE = "pathways"
GCP_KEYS = ("project", "region", "zone", "defaultLabels")

_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_PATHWAYS_VERSION = re.compile(r"^jax-[0-9]+\.[0-9]+(\.[0-9]+)?$")
_GKE_VERSION = re.compile(r"^([0-9]+)\.([0-9]+)(\.([0-9]+)(-gke\.([0-9]+))?)?$")
# What "unlimited" worker restarts means: pathwaysutils' GKE builder gives headless workers
# max_slice_restarts = 1_000_000 (experimental/gke/jobset.py); Job.backoffLimit is an int32.
UNLIMITED_RESTARTS_PER_HOST = 1_000_000
INT32_MAX = 2**31 - 1
DEFAULT_BATCH_RESTARTS_PER_HOST = 4  # the anchors' hosts x 4 (PLATFORM-FACTS §2)
MAX_RESTARTS_BOUND = 10_000
# Head pod containers besides the user's (PLATFORM-FACTS §1: the anchors' limits).
RESOURCE_MANAGER_RESOURCES = ("8", "32Gi")
PROXY_RESOURCES = ("16", "100Gi")
DEFAULT_USER_RESOURCES = ("24", "100Gi")
# The stack's PriorityClasses (and Kueue WorkloadPriorityClasses), pathways-<key>: below system-cluster-critical
# (2e9) and GKE's own; higher wins a node and may preempt lower, and Kueue admits higher first.
PRIORITY_CLASSES = {
    "serving": (2_000_000, "Pathways real-time serving: never preempted by training"),
    "training": (1_000_000, "Pathways production training"),
    "interactive": (500_000, "Pathways interactive endpoints"),
    "experiment": (100_000, "Pathways experiments: the first to give way"),
}
# A serve leader's own containers (Google runs them without requests; these keep the leader Guaranteed on
# the TPU host it shares with a worker, which requests half the VM): the JetStream engine is a JAX client on
# the IFRT proxy (its weights load on the workers); the HTTP front end is a thin gRPC bridge. The engine's
# figure is this project's default, not Google's: serve.engineResources changes it.
JETSTREAM_ENGINE_RESOURCES = ("8", "32Gi")
JETSTREAM_HTTP_RESOURCES = ("1", "2Gi")
# vLLM's engine process is the JAX client and serves HTTP itself; it reads the weights (from gs:// or Hugging
# Face) and streams them to the TPUs through the proxy, so it holds more host memory than JetStream's engine,
# whose checkpoint the workers restore. This project's default, not Google's (serve.engineResources).
VLLM_ENGINE_RESOURCES = ("16", "64Gi")

# Upper bounds. From GKE ("Quotas and limits", Standard clusters): 15,000 nodes per cluster and
# 1,000 nodes per node pool per zone. From this project: at most 1,000 TPU slice pools and 100
# workloads per stack, which `make bench` plans in seconds (see README, Performance).
MAX_NODES_PER_CLUSTER = 15_000
MAX_NODES_PER_POOL_ZONE = 1_000
MAX_TPU_POOLS = 1_000
MAX_WORKLOADS = 100



_NETWORK_REF = re.compile(
    r"(?:(?:https://www\.googleapis\.com/compute/v1/)?projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/"
    r"(?:global|regions/[a-z]+-[a-z]+[0-9]+)/(?:networks|subnetworks)/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)


def _network(v: str) -> "ipaddress.IPv4Network | ipaddress.IPv6Network":
    try:
        return ipaddress.ip_network(str(v), strict=True)
    except ValueError as e:
        raise ValueError(f"{str(v)[:60]!r} is not a CIDR range ({e}); use e.g. 10.0.0.0/20") from None


_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")


def _matching(pattern: str, what: str):
    """An AfterValidator: the value must match `pattern`, else '<value> is not <what>'."""
    regex = re.compile(pattern)

    def check(value: str) -> str:
        if not regex.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return AfterValidator(check)


ProjectId = Annotated[str, _matching(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", "a GCP project ID (6-30 lowercase letters, digits, '-')")]
Region = Annotated[str, _matching(r"^[a-z]+-[a-z]+[0-9]+$", "a GCP region (e.g. us-east5)")]
Zone = Annotated[str, _matching(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$", "a GCP zone (e.g. us-east5-b)")]
PathwaysVersion = Annotated[str, _matching(
    _PATHWAYS_VERSION.pattern, "a Pathways release tag; use jax-<version> matching your program's JAX, e.g. jax-0.9.0"
)]


def _dns_label(value: str, max_len: int) -> str:
    if len(value) > max_len or not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid name; use lowercase letters, digits and '-', start with a "
            f"letter, end with a letter or digit, at most {max_len} characters"
        )
    return value


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        alias_generator=to_camel,
        validate_default=True,
    )
