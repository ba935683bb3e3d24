"""The post-renderer the controller charts are installed with: the webhook certificate Secrets the controllers fill
themselves are applied without their `data`.

Each controller (JobSet, Kueue, LeaderWorkerSet) runs cert-controller's rotator, which writes the webhook's CA and
serving certificate into `<release>-webhook-server-cert` and keeps them fresh. The JobSet chart (v0.12.0,
templates/internalcert/secret.yaml) renders that Secret with `data: {ca.crt: "", ca.key: "", tls.crt: "", tls.key:
""}`; Kueue's and LWS's render none. Applied as rendered, the stack owns those keys with empty values: once a
refresh has read the rotator's certificates, `pulumi up --refresh` sets them back to empty, which the Kubernetes
provider does by replacing the Secret (a Secret's data change is a replacement unless the provider's
enableSecretMutable is on), and the JobSet webhook refuses every JobSet until the rotator has written new ones and
the kubelet has remounted them. Without `data` in what the stack applies, the rotator alone owns it: a refresh
sees nothing to undo (as for Kueue's and LWS's Secrets).

Helm runs a post-renderer on the whole rendered manifest (crds/ included when the Chart applies them) and the
Kubernetes provider gives its Chart resource one (`postRenderer`: a command and its args). The command is `python3
-c` with the function below as its program: standard library only, so it runs wherever `pulumi` runs the Python
program, and the same text in every checkout (no path, so previews from different machines do not differ). The
offline render runs the same command (infra/offline/charts.py).
"""

from __future__ import annotations

import inspect
import textwrap

COMMAND = "python3"


def without_rotated_cert_data(manifest: str) -> str:
    """`manifest` (Helm's multi-document YAML) with the top-level `data` of every Secret whose metadata.name ends in
    -webhook-server-cert removed; every other line as it was. A document it cannot read as such a Secret is left
    whole (the Secret then keeps its data, as before)."""
    suffix = "-webhook-server-cert"

    def top_level(line: str) -> bool:
        return bool(line[:1].strip()) and not line.startswith(("#", "---"))

    def strip(doc: list[str]) -> list[str]:
        top = [i for i, line in enumerate(doc) if top_level(line)]
        at = {doc[i].split(":", 1)[0].strip(): i for i in top}
        if not {"kind", "metadata", "data"} <= set(at):
            return doc
        if doc[at["kind"]].split(":", 1)[1].split("#", 1)[0].strip().strip("'\"") != "Secret":
            return doc
        meta = doc[at["metadata"] + 1:min([i for i in top if i > at["metadata"]], default=len(doc))]
        children = [line for line in meta if line.strip() and not line.lstrip().startswith("#")]
        if not children:
            return doc
        indent = children[0][:len(children[0]) - len(children[0].lstrip())]
        names = [line.split(":", 1)[1].split("#", 1)[0].strip().strip("'\"") for line in children
                 if line.startswith(indent + "name:")]
        if not names or not names[0].endswith(suffix):
            return doc
        end = min([i for i in top if i > at["data"]], default=len(doc))
        return doc[:at["data"]] + doc[end:]

    out: list[str] = []
    doc: list[str] = []
    for line in manifest.splitlines(keepends=True):
        if line.rstrip() == "---":
            out += strip(doc)
            out.append(line)
            doc = []
        else:
            doc.append(line)
    return "".join(out + strip(doc))


def args() -> list[str]:
    """The post-renderer's arguments: `-c` and a program that filters stdin to stdout through the function above."""
    source = textwrap.dedent(inspect.getsource(without_rotated_cert_data))
    return ["-c", f"{source}\nimport sys\nsys.stdout.write(without_rotated_cert_data(sys.stdin.read()))\n"]
