"""A small Kubernetes API client over HTTPS (standard library only): what the harness's long-running parts
(the kubelet stand-in, its probes, watches) need without starting a kubectl process per call.

    api = Api.from_kubeconfig(path)
    api.get("/api/v1/namespaces/kube-system/pods")
    for event in api.watch("/api/v1/pods", fieldSelector="spec.nodeName!="): ...
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


def _material(user: dict[str, Any], key: str, workdir: Path, name: str) -> Optional[str]:
    """A kubeconfig's certificate or key, as a file path (ssl wants files)."""
    if user.get(key):
        return str(user[key])
    data = user.get(f"{key}-data")
    if not data:
        return None
    path = workdir / name
    path.write_bytes(base64.b64decode(data))
    return str(path)


class Api:
    def __init__(self, server: str, context: ssl.SSLContext, token: Optional[str] = None):
        self.server = server.rstrip("/")
        self.context = context
        self.token = token

    @classmethod
    def from_kubeconfig(cls, path: Path) -> "Api":
        cfg = yaml.safe_load(Path(path).read_text())
        current = cfg.get("current-context")
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == current) if current else cfg["contexts"][0]["context"]
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        material = Path(tempfile.mkdtemp(prefix="kube-api-"))
        context = ssl.create_default_context(cafile=_material(cluster, "certificate-authority", material, "ca.crt"))
        cert = _material(user, "client-certificate", material, "client.crt")
        if cert:
            context.load_cert_chain(cert, _material(user, "client-key", material, "client.key"))
        return cls(cluster["server"], context, user.get("token"))

    def _request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                 timeout: float = 30, **query: Any) -> urllib.request.Request:
        url = self.server + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        return req

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json", timeout: float = 30,
             **query: Any) -> Any:
        req = self._request(method, path, body, content_type, **query)
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            try:
                detail = json.loads(detail).get("message", detail)
            except ValueError:
                pass
            raise ApiError(e.code, detail) from None
        return json.loads(raw) if raw else None

    def get(self, path: str, **query: Any) -> Any:
        return self.call("GET", path, **query)

    def create(self, path: str, obj: dict[str, Any], **query: Any) -> Any:
        return self.call("POST", path, obj, **query)

    def merge_patch(self, path: str, patch: dict[str, Any], **query: Any) -> Any:
        return self.call("PATCH", path, patch, content_type="application/merge-patch+json", **query)

    def strategic_patch(self, path: str, patch: dict[str, Any], **query: Any) -> Any:
        return self.call("PATCH", path, patch, content_type="application/strategic-merge-patch+json", **query)

    def delete(self, path: str, **query: Any) -> Any:
        return self.call("DELETE", path, **query)

    def watch(self, path: str, timeout_seconds: int = 300, **query: Any) -> Iterator[dict[str, Any]]:
        """Events ({"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}) until the server ends the watch."""
        req = self._request("GET", path, watch="1", timeoutSeconds=str(timeout_seconds), **query)
        with urllib.request.urlopen(req, context=self.context, timeout=timeout_seconds + 30) as resp:
            for line in resp:
                if line.strip():
                    yield json.loads(line)
