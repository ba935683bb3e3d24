"""What a researcher can do about the cluster's answers (#74.7; pure): kubectl's words for "no credentials" and
"not allowed" become the stack's own command and the people to ask, said once after kubectl's line."""

from __future__ import annotations

from typing import Any, Optional

# kubectl with no usable kubeconfig falls back to localhost:8080 (client-go's default) or says the config is empty
_NO_CREDENTIALS = ("localhost:8080", "current-context is not set", "no configuration has been provided",
                   "error loading config file", "context was not found")
_FORBIDDEN = ("(Forbidden)", " is forbidden: ")


def get_credentials(cfg: Any) -> str:
    """The stack's getCredentials output, as infra/program.py writes it."""
    location = cfg.region if cfg.cluster.regional else cfg.zone
    return f"gcloud container clusters get-credentials {cfg.cluster_name} --location {location} --project {cfg.project} --dns-endpoint"


def hint(message: str, cfg: Any, team: Optional[str] = None) -> Optional[tuple[str, bool]]:
    """(one line with what to do, whether it says all that kubectl's line did), or None for other messages."""
    if any(s in message for s in _NO_CREDENTIALS):
        return (f"kubectl has no credentials for stack {cfg.stack}'s cluster: fetch them with `{get_credentials(cfg)}` "
                "(gcloud auth login first; the gke-gcloud-auth-plugin component), or pass --kubeconfig"), True
    if any(s in message for s in _FORBIDDEN):
        t = next((t for t in cfg.teams if t.name == team), None) if team else None
        who = (f"team {t.name}'s submitters (pathways:teams[].submitters: {', '.join(s.name for s in t.submitters) or 'none yet'})"
               if t is not None else "the runs' submitters (pathways:runs.submitters"
               + (f": {', '.join(s.name for s in cfg.runs.submitters) or 'none yet'})" if cfg.runs is not None else ")"))
        return (f"you are not among {who} of stack {cfg.stack}: ask your platform team to add you, or a Google group you "
                "are in; with a group, GKE's Google Groups for RBAC must be on (cluster.securityGroup)"), False
    return None
