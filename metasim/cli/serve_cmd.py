"""`metasim serve`: expose a metasim policy over the openpi websocket protocol.

    metasim serve policy=scripted --port 8000
    metasim eval policy=metasim_remote policy.port=8000     # evaluate it through openpi

Binds 127.0.0.1 unless `--host` says otherwise; `--api-key` (or METASIM_API_KEY) makes
the server refuse clients without it. An address other machines reach (`--host 0.0.0.0`,
a LAN address) without a key is refused unless `--allow-unauthenticated` says so: anyone
who reaches the port could then use the policy. `GET /healthz` answers 200.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import threading
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.guards import bounded_float, bounded_int


def add_parser(verbs: Any) -> None:
    srv = verbs.add_parser(
        "serve", help="serve a metasim policy over the openpi websocket protocol"
    )
    srv.add_argument("overrides", nargs="*", help="policy config, e.g. policy=scripted")
    srv.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    srv.add_argument(
        "--port", type=bounded_int(0, 65535), default=8000, help="port (0: any free port)"
    )
    srv.add_argument("--api-key", default=None, help="require this key (or METASIM_API_KEY)")
    srv.add_argument(
        "--max-frame-mb",
        type=bounded_float(0, 4096, open_lo=True),
        default=16.0,
        help="largest request frame (default 16 MiB)",
    )
    srv.add_argument(
        "--idle-timeout",
        type=bounded_float(0, 7 * 86400),
        default=300.0,
        help="close connections silent this long (s; 0: never)",
    )
    srv.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve a non-loopback --host without --api-key (anyone who reaches it may use it)",
    )
    srv.add_argument("--debug", action="store_true", help="send tracebacks to clients")


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach `host` (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def check_exposure(host: str, api_key: str | None, allowed: bool) -> None:
    """Refuse to serve other machines without a key unless the user says so."""
    if api_key or allowed or is_loopback(host):
        return
    raise MetasimInputError(
        f"--host {host}",
        [
            "this address can be reached from other machines and no --api-key (or "
            "METASIM_API_KEY) is set, so anyone who reaches the port could use the policy"
        ],
        "Set --api-key, bind 127.0.0.1, or pass --allow-unauthenticated to serve without one",
    )


def run_serve_cli(args: argparse.Namespace) -> int:
    from metasim.evaluate.config import compose
    from metasim.policies.base import policy_kind
    from metasim.policies.serving import PROTOCOL, session_factory
    from metasim.policies.transport.server import PolicyServer

    api_key = args.api_key or os.environ.get("METASIM_API_KEY") or None
    check_exposure(args.host, api_key, args.allow_unauthenticated)
    spec = compose(list(args.overrides)).rollout  # the policy typed as `metasim eval` has it
    if policy_kind(spec.policy).client:
        raise MetasimInputError(
            "command line", [f"policy={spec.policy} is a client; serve a local policy"]
        )
    metadata = {
        "protocol": PROTOCOL,
        "policy": spec.policy,
        "action_space": spec.actions.env_space,
    }
    server = PolicyServer(
        session_factory(spec.policy, spec.options),
        metadata=metadata,
        host=args.host,
        port=args.port,
        api_key=api_key,
        max_frame_bytes=int(args.max_frame_mb * 2**20),
        debug=args.debug,
        idle_timeout=args.idle_timeout if args.idle_timeout > 0 else None,
    )
    try:
        server.start()
    except OSError as exc:  # a port in use, an address not on this machine
        raise MetasimInputError(
            f"--host {args.host} --port {args.port}",
            [f"cannot listen there ({exc.strerror or exc})"],
            "Choose another --port (0: any free port) or stop what listens on it",
        ) from None
    auth = " (API key required)" if api_key else ""
    if not api_key and not is_loopback(args.host):
        auth = " WITHOUT an API key: anyone who reaches this port can use the policy"
    sys.stderr.write(f"serving policy {spec.policy!r} on {server.url}{auth}\n")
    sys.stderr.flush()
    try:
        threading.Event().wait()  # until Ctrl-C / SIGTERM
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


verb("serve", add_parser, run_serve_cli)
