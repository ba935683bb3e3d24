"""Deliberate faults the tier puts into the stack's program (run by tools/pulumi_real/host.py when a scenario
names one in PATHWAYS_PULUMI_PROGRAM), to show that a check of the tier can fail. Never the product."""

from __future__ import annotations

from typing import Any


def lws_chart_without_seccomp() -> None:
    """The stack's program, but the LeaderWorkerSet chart installed with its own pod security context
    (charts/lws/values.yaml: runAsNonRoot only, no seccomp profile), as the stack did before issue #34."""
    import components.kubernetes.lws_controller as lws_controller
    from infra.program import main

    install = lws_controller.install_chart

    def without_seccomp(parent: Any, name: str, **kwargs: Any) -> Any:
        kwargs["values"] = {**kwargs["values"], "podSecurityContext": {"runAsNonRoot": True}}
        return install(parent, name, **kwargs)

    lws_controller.install_chart = without_seccomp  # type: ignore[assignment]
    main()
