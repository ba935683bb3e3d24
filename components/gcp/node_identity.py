"""The node service accounts' identities: a dedicated account for the system pool and one for the head, TPU and
proxy pools (never the Compute default SA), with only the roles nodes need to log, report metrics and pull
images (components/model/identities.NODE_ROLES). Data access (the scratch bucket) is granted on the buckets.

The bootstrap project creates both accounts and their project roles (bootstrap/program.py), with the IDs the
stack derives from its cluster name (StackConfig.service_account_id), so the deploy identity needs neither to create
service accounts nor to grant project roles: it may only act as these two accounts, to run nodes as them. Here they
are names, not resources."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeServiceAccount:
    project: str
    account_id: str
    """Service account ID (6-30 characters), as the bootstrap creates it."""

    @property
    def email(self) -> str:
        """For node_config.service_account (IAM: <account ID>@<project ID>.iam.gserviceaccount.com)."""
        return f"{self.account_id}@{self.project}.iam.gserviceaccount.com"

    @property
    def member(self) -> str:
        """serviceAccount:<email>, for IAM bindings."""
        return f"serviceAccount:{self.email}"
