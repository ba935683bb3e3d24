"""`why` on a run Kueue stopped at its time limit (`submit --time-limit`, #74.4; pure).

Past the JobSet's `kueue.x-k8s.io/max-exec-time-seconds` (admitted time, summed over evictions), Kueue v0.19.2's
Workload controller deactivates the Workload (reconcileMaxExecutionTime): `spec.active: false`, the Evicted
condition's reason `DeactivatedDueToMaximumExecutionTimeExceeded`, the JobSet suspended and its pods gone. The run
is not failed: reactivating it would stop it again at once, so the fix is a new run."""

from __future__ import annotations

from typing import Any, Optional

from components.manifests.kueue_api import MAX_EXEC_TIME_EVICTION, MAX_EXEC_TIME_LABEL
from infra.run.stack_args import again
from infra.run.why_facts import Diagnosis, Evidence, StackView, duration, meta, one_line


def stopped_at_limit(ev: Evidence, wl: dict[str, Any], view: StackView) -> Optional[Diagnosis]:
    evicted = next((c for c in (wl.get("status") or {}).get("conditions") or []
                    if c.get("type") == "Evicted" and c.get("reason") == MAX_EXEC_TIME_EVICTION), None)
    if evicted is None:
        return None
    limit = (meta(ev.jobset).get("labels") or {}).get(MAX_EXEC_TIME_LABEL) or str((wl.get("spec") or {}).get("maximumExecutionTimeSeconds") or "?")
    shown = duration(int(limit)) if limit.isdigit() else limit
    return Diagnosis("time-limit", f"Kueue stopped it at its time limit ({shown}: {MAX_EXEC_TIME_LABEL} {limit}); its pods are gone",
                     (f"Workload {meta(wl).get('name')}: Evicted {evicted.get('reason')} at {evicted.get('lastTransitionTime')}: "
                      f"{one_line(evicted.get('message'))}", "spec.active: false (reactivated, it would stop again at once)"),
                     f"submit it again with a longer --time-limit (from its last checkpoint), and remove this one: "
                     f"{again('delete', view.stack)} {ev.name}")
