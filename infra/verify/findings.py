"""What `python -m infra.offline verify` reports: findings with a severity, what was found and the fix (pure)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SEVERITIES = ("high", "medium", "low", "info")
# The one scale of the stack's alerts and verify's findings (#75.7): a finding's severity as the Cloud Monitoring
# AlertPolicy severity an alert of the same weight carries (components/manifests/monitoring.py ALERT_SEVERITY), so
# that one routing rule (a page for CRITICAL, a ticket for ERROR, a count for WARNING) serves both.
ALERT_SEVERITY_OF = {"high": "CRITICAL", "medium": "ERROR", "low": "WARNING", "info": None}


@dataclass(frozen=True)
class Finding:
    severity: str
    """high: a guard, Pod Security, RBAC or policy weakened; medium: queues and workloads; low: the rest; info: noted"""
    area: str
    """drift, audit, reservation or upstream"""
    subject: str
    """what it is about: a resource as `diff` names it, a pin, a reservation"""
    what: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "alertSeverity": ALERT_SEVERITY_OF[self.severity]}


def ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITIES.index(f.severity), f.area, f.subject, f.what))


def text(findings: list[Finding], stack: str, checked: list[str]) -> str:
    lines = [f"verify {stack}: {', '.join(checked)}"]
    if not findings:
        lines.append("no findings")
    for f in ordered(findings):
        scale = ALERT_SEVERITY_OF[f.severity]
        lines.append(f"{f.severity.upper():6} {f'({scale}) ' if scale else ''}{f.area}: {f.subject}: {f.what}")
        lines.append(f"       fix: {f.fix}")
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "0 findings")
    return "\n".join(lines) + "\n"


def report(findings: list[Finding], stack: str, checked: list[str]) -> dict[str, Any]:
    """The report as `--json` prints it (beside what was filtered and acknowledged)."""
    return {"stack": stack, "checked": checked, "findings": [f.to_json() for f in ordered(findings)]}
