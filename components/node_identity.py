"""NodeServiceAccount: a dedicated node identity (never the Compute default SA) with only the roles
nodes need to log, report metrics and pull images. Data access (the scratch bucket) is granted
elsewhere, on the bucket."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from .model.identities import NODE_ROLES


@dataclass(frozen=True)
class NodeServiceAccountArgs:
    project: str
    """Project of the account and its role bindings."""
    account_id: str
    """Service account ID (6-30 characters)."""
    display_name: str
    """Shown in the console."""


class NodeServiceAccount(pulumi.ComponentResource):
    email: pulumi.Output[str]
    """The account's email, for node_config.service_account."""
    member: pulumi.Output[str]
    """serviceAccount:<email>, for IAM bindings."""

    def __init__(self, name: str, args: NodeServiceAccountArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:NodeServiceAccount", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account = gcp.serviceaccount.Account(
            name, project=args.project, account_id=args.account_id, display_name=args.display_name, opts=child
        )
        self.email = account.email
        self.member = account.email.apply(lambda e: f"serviceAccount:{e}")
        for role in NODE_ROLES:
            gcp.projects.IAMMember(
                f"{name}-{role.split('/')[1].replace('.', '-')}",
                project=args.project,
                role=role,
                member=self.member,
                opts=child,
            )
        self.register_outputs({"email": self.email, "member": self.member})
