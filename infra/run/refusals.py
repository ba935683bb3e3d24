"""What the API server's refusal of an object says, as `why` answers it: which admission policy (a guard, or the runs
policy) or which Pod Security check, and the fix (pure). Used for a run's Jobs and pods the JobSet and Job
controllers could not create (their JobCreationFailed and FailedCreate events) and for `why --file`, a hand-made
JobSet's server-side dry run."""

from __future__ import annotations

import re
from typing import Any, Optional

from infra.run.why_facts import Diagnosis, StackView, meta, one_line

REFUSAL = re.compile(r"ValidatingAdmissionPolicy '([^']+)'(?: with binding '[^']*')? denied request: (.*)")
POD_SECURITY = re.compile(r'violates PodSecurity "([^"]+)": (.*)')


def refusal(message: str, view: StackView) -> Optional[Diagnosis]:
    """The API server's refusal of an object (a Job the JobSet controller made, a pod, a JobSet applied by hand)."""
    text = one_line(message, 600)
    m = REFUSAL.search(text)
    if m:
        policy, said = m.group(1), m.group(2)
        runs = "runs" in policy
        return Diagnosis("refused-by-runs-policy" if runs else "refused-by-guard",
                         f"the admission policy {policy} refuses it: {one_line(said, 200)}",
                         (f"the API server: {text}",),
                         "make runs with python -m infra.run submit, which builds them as the policies require"
                         + ("" if runs else "; the stack's guards keep privileged, host and node-bound pods off the Pathways nodes"))
    m = POD_SECURITY.search(text)
    if m:
        return Diagnosis("refused-by-pod-security", f"Pod Security ({m.group(1)}) refuses its pods: {one_line(m.group(2), 200)}",
                         (f"the API server: {text}",),
                         f"remove what the level forbids; runs made with python -m infra.run submit pass {view.namespace}'s level")
    if "forbidden" in text and "cannot create resource" in text:
        return Diagnosis("not-allowed", "you may not create it here (RBAC)", (f"the API server: {text}",),
                         f"ask the platform team to list you (or your group) in runs.submitters of stack {view.stack}")
    return None


def file_verdict(obj: dict[str, Any], refused: Optional[str], view: StackView) -> Diagnosis:
    """`why --file`: what the API server said to a server-side dry run of a hand-made object."""
    what = f"{obj.get('kind', 'object')} {meta(obj).get('name', '')}".strip()
    if refused is None:
        return Diagnosis("accepted", f"the cluster would create {what} (a server-side dry run passed its admission)", (),
                         "create it; `why NAME` then follows it")
    found = refusal(refused, view)
    if found is not None:
        return found
    return Diagnosis("refused", f"the cluster refuses {what}", (f"the API server: {one_line(refused, 600)}",),
                     "fix what the API server names; python -m infra.run submit builds runs the cluster takes")
