"""The offline engine's stand-ins for what Google Cloud would compute or answer (infra/offline/engine.py): the same
config always gives the same values. Documentation ranges only (RFC 5737)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Optional

from pulumi.runtime import mocks as pulumi_mocks

# Stand-in values for what Google Cloud would compute. Documentation ranges only (RFC 5737).
PROJECT_NUMBER = "123456789012"
CLUSTER_ENDPOINT = "203.0.113.10"
CLUSTER_PRIVATE_ENDPOINT = "10.0.0.2"
CLUSTER_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm9mZmxpbmUKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


# The stand-in token Secrets' creation time: fixed, so that a plan is the same on any day (what is derived from a
# token, the metrics adapter's certificate, is valid five years from it).
STAND_IN_CREATED = "2026-12-01T00:00:00Z"


def stand_in_token(namespace: str, name: str) -> tuple[str, str]:
    """What the offline engine's stand-in token controller fills the token Secret namespace/name with: its data.token
    (base64, as the API returns it: one per Secret, as long as a real token's signature) and its
    metadata.creationTimestamp."""
    token = f"offline-token-{hashlib.sha256(f'{namespace}/{name}'.encode()).hexdigest()}"
    return base64.b64encode(token.encode()).decode(), STAND_IN_CREATED


# pulumi-gcp's reservation reads the live read makes (infra/reservation_records.py)
RESERVATION_READS = ("gcp:compute/getReservation:getReservation", "gcp:compute/getReservationBlock:getReservationBlock",
                     "gcp:compute/getReservationSubBlock:getReservationSubBlock")


class StandInMocks(pulumi_mocks.Mocks):
    """Deterministic outputs for resources and invokes that would otherwise need Google Cloud."""

    def __init__(self, project: str, reservations: Optional[dict[str, dict[str, Any]]] = None,
                 stack_outputs: Optional[dict[str, dict[str, Any]]] = None, quotas: Optional[dict[str, dict[str, Any]]] = None):
        self.project = project
        # recorded get_s_quota_info responses by quota ID (tests of pathways:readQuota; offline, none is read)
        self.quotas = quotas or {}
        # other stacks' outputs by fully qualified name, for stack references (a fleet manager reads its workers')
        self.stack_outputs = stack_outputs or {}
        # recorded get_reservation(_block, _sub_block) responses by "<project>/<name>[/<block>[/<sub-block>]]" (tests of
        # the live read; offline, none is read)
        self.reservations = reservations or {}

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[Optional[str], dict]:
        inputs = dict(args.inputs)
        t, name, project = args.typ, inputs.get("name", args.name), inputs.get("project", self.project)
        extra: dict[str, Any] = {}
        if t == "gcp:serviceaccount/account:Account":
            email = f"{inputs['accountId']}@{project}.iam.gserviceaccount.com"
            extra = {"email": email, "member": f"serviceAccount:{email}", "name": f"projects/{project}/serviceAccounts/{email}"}
        elif t == "gcp:container/cluster:Cluster":
            endpoints = dict(inputs.get("controlPlaneEndpointsConfig") or {})
            endpoints["dnsEndpointConfig"] = {**(endpoints.get("dnsEndpointConfig") or {}), "endpoint": f"gke-0123456789abcdef-{project}.{inputs.get('location')}.gke.goog"}
            extra = {
                "endpoint": CLUSTER_ENDPOINT, "masterAuth": {"clusterCaCertificate": CLUSTER_CA},
                # a stand-in private IP endpoint, in the range GKE gives a PSC-based cluster's control plane
                "privateClusterConfig": {**(inputs.get("privateClusterConfig") or {}), "privateEndpoint": CLUSTER_PRIVATE_ENDPOINT},
                "controlPlaneEndpointsConfig": endpoints,
                "selfLink": f"projects/{project}/locations/{inputs.get('location')}/clusters/{name}",
            }
        elif t == "gcp:storage/bucket:Bucket":
            extra = {"url": f"gs://{name}", "selfLink": f"https://www.googleapis.com/storage/v1/b/{name}"}
        elif t == "gcp:projects/iAMCustomRole:IAMCustomRole":
            extra = {"name": f"projects/{project}/roles/{inputs.get('roleId')}"}
        elif t.startswith("gcp:compute/"):
            extra = {"selfLink": f"projects/{project}/{t.split('/')[1].split(':')[0]}s/{name}"}
        elif t == "pulumi:pulumi:StackReference":
            # as the engine reads one: the stack's outputs, none if it has none (a stack not yet deployed)
            extra = {"outputs": self.stack_outputs.get(str(inputs.get("name")), {}), "secretOutputNames": []}
        elif t == "kubernetes:core/v1:Secret" and inputs.get("type") == "kubernetes.io/service-account-token":
            # the token controller fills it (the provider waits for it): a stand-in token, one per Secret and as long
            # as a real one's signature, made today (what the metrics adapter's certificate is derived from)
            meta = inputs.get("metadata") or {}
            token, created = stand_in_token(str(meta.get("namespace", "")), str(meta.get("name", args.name)))
            extra = {"data": {"token": token, **(inputs.get("data") or {})},
                     "metadata": {**(inputs.get("metadata") or {}), "creationTimestamp": created}}
        elif t == "random:index/randomPassword:RandomPassword":
            extra = {"result": f"offline-{args.name}"}
        resource_id = extra.get("name") if t == "gcp:projects/iAMCustomRole:IAMCustomRole" else f"{args.name}-id"
        return resource_id, {**inputs, **extra}

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict, Optional[list[tuple[str, str]]]]:
        # No failures is [], not None: the SDK's mock monitor iterates a tuple's failures.
        if args.token == "gcp:organizations/getProject:getProject":
            project = args.args.get("projectId") or self.project
            return {"projectId": project, "number": PROJECT_NUMBER, "name": project, "id": f"projects/{project}"}, []
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"project": self.project, "accessToken": "offline", "id": "offline"}, []
        if args.token in RESERVATION_READS:
            a = args.args
            owner = a.get("project") or self.project
            # "<project>/<reservation>[/<block>[/<sub-block>]]", and the API's path of the same
            parts = [a["name"]] if "reservation" not in a else [a["reservation"], *([a["reservationBlock"]] if "reservationBlock" in a else []), a["name"]]
            key = "/".join([owner, *parts])
            if key not in self.reservations:
                # as the provider's error reaches the program: a failed invoke it can catch (a raise here would be an
                # RPC failure, which the SDK re-raises at the end whatever the program did)
                api = "/".join(f"{kind}/{part}" for kind, part in zip(("reservations", "reservationBlocks", "reservationSubBlocks"), parts, strict=False))
                return {}, [("name", f"googleapi: Error 404: The resource 'projects/{owner}/zones/{a.get('zone')}/{api}' "
                                     "was not found, notFound")]
            return self.reservations[key], []
        if args.token == "gcp:cloudquota/getSQuotaInfo:getSQuotaInfo":
            quota_id = args.args.get("quotaId")
            if quota_id not in self.quotas:
                return {}, [("quotaId", f"googleapi: Error 404: QuotaInfo {quota_id} not found for {args.args.get('parent')}, notFound")]
            return self.quotas[quota_id], []
        raise NotImplementedError(f"the offline engine has no stand-in for invoke {args.token}")
