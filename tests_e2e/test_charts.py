"""The controllers' charts as `pulumi up` installs them, and what the tier does when one cannot run: a chart
pod the API server's Pod Security admission refuses fails the deploy at once, with the API server's reason,
and the failed stack is taken down (tools/cluster/deploy.py); the check can fail."""

from __future__ import annotations

import pytest

from tests_e2e.test_stacks import example_stack_config
from tools.cluster.deploy import DeployFailed, deploy_stack, leftovers


def test_a_chart_pod_pod_security_refuses_fails_the_deploy(cluster, stacks):
    stacks.close()  # one stack at a time: this one owns the charts while it lasts
    with pytest.raises(DeployFailed) as failed:
        deploy_stack(cluster, "nosec", example_stack_config("serving"), cluster.workdir / "stacks" / "nosec",
                     program="tests_e2e.programs:lws_chart_without_seccomp")
    message = str(failed.value)
    assert "Deployment lws-system/lws-controller-manager" in message, message
    assert 'violates PodSecurity "restricted:latest"' in message and "seccompProfile" in message, message
    # the failed stack was destroyed with what it had made, and no controller runs. Pulumi cannot record a create
    # the interrupt cancelled mid-request, so the harness may sweep such an object (a CRD, once in CI); but what
    # the up had made and awaited (the refused Deployment's namespace and webhooks) goes with pulumi destroy
    assert not [s for s in failed.value.swept if "lws-system" in s or "webhook" in s], failed.value.swept
    assert leftovers(cluster) == [] and cluster.kubelet.running() == []
