"""A stand-in for tpu-inference's prefill/decode proxy (examples/disagg/toy_proxy_server.py, read at tpu-inference
b8692ff0; the script is in the engine's image, not in the pinned wheels, and no image runs here): started with the
proxy pod's own command line, it takes the script's flags and does what the script does with each request:

- `--host`, `--port` (8000), `--prefiller-hosts`/`--prefiller-ports` and `--decoder-hosts`/`--decoder-ports`
  (lists of equal length; round-robin over each);
- POST /v1/completions and /v1/chat/completions: to a prefill host a copy with stream false and max_tokens 1
  (max_completion_tokens 1 where given; stream_options dropped), then the original request, with the
  `kv_transfer_params` prefill answered (where not empty), to a decode host, whose answer goes back;
- GET /health answers for the proxy itself.

No cluster DNS and no kube-proxy run on the tier: a `<service>.<namespace>.svc` host is resolved through
STAND_IN_SERVICES, a JSON file {host: [ready pod IPs]} the scenario writes from the Services' EndpointSlices, round-
robin over the IPs, as kube-proxy spreads connections over a Service's ready endpoints. Standard library only."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="localhost")
    p.add_argument("--prefiller-hosts", "--prefiller-host", nargs="+", default=["localhost"])
    p.add_argument("--prefiller-ports", "--prefiller-port", type=int, nargs="+", default=[8400])
    p.add_argument("--decoder-hosts", "--decoder-host", nargs="+", default=["localhost"])
    p.add_argument("--decoder-ports", "--decoder-port", type=int, nargs="+", default=[9400])
    args = p.parse_args(argv)
    if len(args.prefiller_hosts) != len(args.prefiller_ports) or len(args.decoder_hosts) != len(args.decoder_ports):
        p.error("each host list needs a port list of its length")
    return args


def main(argv: list[str]) -> int:
    args = _args(argv)
    services = json.loads(open(os.environ["STAND_IN_SERVICES"]).read())
    turns = {host: itertools.cycle(ips) for host, ips in services.items() if ips}
    lock = threading.Lock()
    prefill = itertools.cycle(list(zip(args.prefiller_hosts, args.prefiller_ports, strict=True)))
    decode = itertools.cycle(list(zip(args.decoder_hosts, args.decoder_ports, strict=True)))

    def address(host: str) -> str:
        if not host.endswith(".svc"):
            return host
        with lock:
            if host not in turns:
                raise OSError(f"{host}: no ready endpoint")
            return next(turns[host])

    def post(target: tuple[str, int], path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        url = f"http://{address(target[0])}:{target[1]}{path}"
        req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, json.dumps({"status": "ok", "prefill_instances": len(args.prefiller_hosts),
                                            "decode_instances": len(args.decoder_hosts)}).encode())
            else:
                self._send(404, b"{}")

        def do_POST(self) -> None:
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self._send(404, b"{}")
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            first = {**body, "stream": False, "max_tokens": 1}
            if "max_completion_tokens" in first:
                first["max_completion_tokens"] = 1
            first.pop("stream_options", None)
            with lock:
                p, d = next(prefill), next(decode)
            try:
                status, answer = post(p, self.path, first)
                if status != 200:
                    self._send(status, answer)
                    return
                params = json.loads(answer).get("kv_transfer_params")
                if params:
                    body["kv_transfer_params"] = params
                status, answer = post(d, self.path, body)
            except OSError as e:
                self._send(502, json.dumps({"error": str(e)}).encode())
                return
            self._send(status, answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
