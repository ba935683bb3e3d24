"""A Python language host for the real Pulumi CLI: `pulumi <command> --client=127.0.0.1:<port>` runs the
stack's program (infra/__main__.py's main) in this process through the Pulumi SDK's own LanguageRuntime
server, the one the Automation API uses for inline programs (pulumi.automation._server.LanguageServer).

Why: the CLI's `pulumi-language-python` host lives in a Go module the module proxy here does not serve
(sdk/python/cmd/pulumi-language-python/v3). Everything else in a run is real: the CLI and its engine,
the provider plugins, the policy pack. What this host does not do is what the real host does before the
program starts (create the virtualenv and install infra/requirements.txt): the program runs in the
project's .venv, installed from the same lock.

    python -m tools.pulumi_real.host     # prints the port, serves until killed
"""

from __future__ import annotations

import sys
import time
from concurrent import futures
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[2]


def _program():
    """The stack's program, or (a scenario's deliberate fault, never the product) the entry point named by
    PATHWAYS_PULUMI_PROGRAM as module:function; run with the project root the CLI's own Python host passes
    (pulumi-language-python-exec --root_directory, pulumi.get_root_directory(): the program reads the stack file
    there), which the inline server does not: PulumiRun names it in PATHWAYS_PULUMI_ROOT."""
    import importlib
    import os

    from pulumi.runtime import settings

    entry = os.environ.get("PATHWAYS_PULUMI_PROGRAM")
    if entry:
        module, _, function = entry.partition(":")
        program = getattr(importlib.import_module(module), function)
    else:
        from infra.program import main as program

    def run() -> None:
        root = os.environ.get("PATHWAYS_PULUMI_ROOT")
        if root:
            settings.SETTINGS.root_directory = root  # pyright: ignore[reportAttributeAccessIssue]  # a context property
        program()

    return run


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from pulumi.automation._server import LanguageServer
    from pulumi.runtime.proto import language_pb2_grpc

    program = _program()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=[("grpc.max_receive_message_length", 400 << 20)])
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageServer(program), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
