"""The stack's program (infra/program.py's main) as the Pulumi CLI's own Python language host runs it, for the
real-engine tier's language host (tools/pulumi_real/host.py), which serves the program through the Automation
API's inline server: the real host passes the project root, the directory of Pulumi.yaml, to the program
(pulumi-language-python-exec --root_directory, read back by pulumi.get_root_directory()); the inline server does
not. A scenario names the root of its PulumiRun in PATHWAYS_E2E_PROJECT_ROOT and runs this entry point
(PulumiRun(..., program="tests_e2e.project_root_host:main")). Nothing else differs: same program, same CLI."""

from __future__ import annotations

import os

from pulumi.runtime import settings

ROOT_ENV = "PATHWAYS_E2E_PROJECT_ROOT"


def main() -> None:
    # the run's settings are set per run by the server (reset_options); this is the one the real host sets too
    settings.SETTINGS.root_directory = os.environ[ROOT_ENV]  # pyright: ignore[reportAttributeAccessIssue]  # a context property: the stubs type the descriptor
    from infra.program import main as program

    program()
