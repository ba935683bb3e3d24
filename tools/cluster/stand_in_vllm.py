"""A stand-in for `vllm serve` on a split endpoint's engine pod (the real-engine tier runs no TPU engine): started
with the pod's own command line and environment, it speaks the part of vLLM's OpenAI-compatible HTTP API a
prefill/decode proxy uses, and plays tpu-inference's TPUConnector where the proxy and the other role can see it.
Each name below is the pinned release's (components/model/workloads/vllm.py cites the sources):

- `--kv-transfer-config` names the role: kv_producer (prefill) or kv_consumer (decode);
- prefill: a non-streaming request that ends at its length cap (max_tokens 1) answers `kv_transfer_params`
  {uuid, remote_block_ids, remote_host, remote_port}: remote_host is vLLM's get_ip() (VLLM_HOST_IP, else the default
  route's address) and remote_port TPU_KV_TRANSFER_PORT (default 9100); it listens there and on
  TPU_SIDE_CHANNEL_PORT (default 9600), as the connector's transfer server and side channel do;
- decode: a request's `kv_transfer_params` are where it pulls from: it connects to remote_host:remote_port and to
  remote_host on its own TPU_SIDE_CHANNEL_PORT (the connector dials prefill's side channel with its own value),
  and answers 502 if either is unreachable, as a pull that fails does.

Every request is appended as one JSON line to STAND_IN_RECORD (the scenario reads them): the role, the pod's
address, the path, max_tokens, stream, the kv_transfer_params received and answered, and what decode reached.
Standard library only."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _flag(argv: list[str], name: str, default: str | None = None) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def _listen(host: str, port: int) -> None:
    """Accept and drop connections on a port, as the transfer server and the side channel accept them."""
    server = socket.create_server((host, port), reuse_port=False)

    def loop() -> None:
        while True:
            conn, _ = server.accept()
            conn.close()
    threading.Thread(target=loop, daemon=True).start()


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError:
        return False


def main(argv: list[str]) -> int:
    if argv[:1] != ["serve"] or len(argv) < 2:
        print(f"stand-in vllm: expected `vllm serve <model> ...`, got {argv}", file=sys.stderr)
        return 2
    model = _flag(argv, "--served-model-name") or argv[1]
    port = int(_flag(argv, "--port", "8000") or "8000")
    config = json.loads(_flag(argv, "--kv-transfer-config") or "{}")
    role = {"kv_producer": "prefill", "kv_consumer": "decode"}.get(config.get("kv_role", ""), "")
    host_ip = os.environ.get("VLLM_HOST_IP") or socket.gethostbyname(socket.gethostname())
    kv_port = int(os.environ.get("TPU_KV_TRANSFER_PORT", "9100"))
    side_port = int(os.environ.get("TPU_SIDE_CHANNEL_PORT", "9600"))
    record_path = os.environ["STAND_IN_RECORD"]
    lock = threading.Lock()
    if role == "prefill":
        _listen("0.0.0.0", kv_port)
        _listen("0.0.0.0", side_port)

    def record(entry: dict[str, Any]) -> None:
        with lock, open(record_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {})
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
            else:
                self._send(404, {"error": self.path})

        def do_POST(self) -> None:
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self._send(404, {"error": self.path})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            given = body.get("kv_transfer_params")
            entry: dict[str, Any] = {"role": role, "pod": host_ip, "path": self.path, "model": body.get("model"),
                                     "max_tokens": body.get("max_tokens"), "stream": bool(body.get("stream")),
                                     "received": given}
            answered = None
            if role == "prefill" and body.get("max_tokens") == 1 and not body.get("stream"):
                answered = {"uuid": uuid.uuid4().int >> 78, "remote_block_ids": [0, 1],
                            "remote_host": host_ip, "remote_port": kv_port}
            if role == "decode" and given:
                remote = str(given.get("remote_host"))
                entry["reached"] = {"transfer": _reachable(remote, int(given.get("remote_port", 0))),
                                    "sideChannel": _reachable(remote, side_port)}
                if not all(entry["reached"].values()):
                    record(entry)
                    self._send(502, {"error": f"could not pull the KV cache from {remote}"})
                    return
            entry["answered"] = answered
            record(entry)
            text = "" if role == "prefill" else f" answered by decode at {host_ip}"
            self._send(200, {"id": f"cmpl-{uuid.uuid4().hex[:8]}", "object": "text_completion", "model": model,
                             "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
                             "kv_transfer_params": answered})

        def log_message(self, format: str, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
