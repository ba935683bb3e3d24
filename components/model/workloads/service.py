"""A Shared Pathways Service (mode: service): its clients and its proxies' contract with pathwaysutils' client
(its rules: service_checks.py; the shared parts of a workload: workload.py)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    field_validator,
)

from components.model.common import (
    MAX_NODES_PER_POOL_ZONE,
    _dns_label,
    _Model,
)

# The Shared Pathways Service contract (pathwaysutils 0.1.13, experimental/shared_pathways_service):
# clients deploy a proxy Job (yamls/pw-proxy.yaml: hostNetwork, port 29000, limits 16 CPU / 100G,
# runAsUser 1000, no tolerations) with `kubectl apply` into their context's namespace, and read the
# service JobSet from namespace "default" (gke_utils.get_pathways_service_images).
CLIENT_PROXY_RESOURCES = ("16", "100G")
CLIENT_NAMESPACE = "default"
# What the client accepts as a service's TPU (validators._validate_tpu_supported; tpu_specs assumes 4
# chips per VM for every family, so a 1- or 8-chip VM miscounts the slice's workers).
CLIENT_INSTANCE_TYPE = re.compile(r"tpu(v5e|v5|v6e|7x):[0-9]+(x[0-9]+){1,2}")
CLIENT_CHIPS_PER_VM = 4


class ServiceClient(_Model):
    kind: Literal["Group", "User"] = Field(default="Group", description="RBAC subject kind.")
    name: str = Field(description="Google group or user email, e.g. pathways-users@example.com.")

    @field_validator("name")
    @classmethod
    def _email(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}", v):
            raise ValueError(f"{v[:80]!r} is not a Google account or group email")
        return v


class SharedService(_Model):
    namespace: str = Field(default=CLIENT_NAMESPACE, description=(
        "Namespace of the service JobSet and of the clients' proxy Jobs: 'default', the only one pathwaysutils' "
        "client reads the service from."
    ))
    max_clients: int = Field(default=4, ge=1, le=MAX_NODES_PER_POOL_ZONE, description=(
        "Concurrent client proxies: one proxy node each (a proxy takes host port 29000)."
    ))
    proxy_machine_type: str = Field(default="n2-standard-32", description="Proxy nodes; must hold a 16 CPU / 100G proxy.")
    clients: list[ServiceClient] = Field(default_factory=list, max_length=50, description="Who may connect (a Role in the namespace).")

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        return _dns_label(v, 63)
