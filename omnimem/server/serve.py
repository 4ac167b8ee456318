"""Running the app with uvicorn: ``omnimem serve`` (one process, or several workers on one store).

Workers are separate processes, so each opens the store itself: the options
travel to them in the environment variable ``OMNIMEM_SERVE_OPTIONS`` (JSON)
and :func:`app_from_env` builds each worker's app. SQLite stores support
several processes (WAL, busy timeout, indexes that catch up with other
processes' writes); rate limits are counted per worker.

The app answers only for loopback Host names, the ``--host`` interface and
``--allowed-host`` names (:mod:`omnimem.server.guard`). uvicorn believes
``X-Forwarded-For``/``-Proto`` only from ``--forwarded-allow-ips`` (its own
default would trust 127.0.0.1, so any local process could claim any address).
Each worker loads the embedding model when it starts (``/readyz``).
A request head must arrive within ``--header-timeout`` seconds
(:mod:`omnimem.server.headtimeout`), its body within ``--body-timeout``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from omnimem.errors import ConfigError
from omnimem.server.app import DEFAULT_MAX_BODY, DEFAULT_MAX_UPLOAD, DEFAULT_SEARCH_CONCURRENCY, create_app
from omnimem.server.guard import ANY_HOST, DEFAULT_BODY_TIMEOUT, LOOPBACK_HOSTS, host_names
from omnimem.server.headtimeout import DEFAULT_HEADER_TIMEOUT, ENV_TIMEOUT
from omnimem.server.limits import RateLimit

if TYPE_CHECKING:
    from omnimem.memory import LocalMemory

ENV = "OMNIMEM_SERVE_OPTIONS"
LOOPBACK = LOOPBACK_HOSTS


@dataclass(frozen=True)
class ServeOptions:
    """What ``omnimem serve`` was asked for; JSON-serialisable for the workers."""

    store: str | None = None
    url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8420
    auth: bool = True
    workers: int = 1
    rate: float = 50.0  # requests per second per key; 0 turns the limit off
    burst: int = 100
    max_body: int = DEFAULT_MAX_BODY
    max_upload: int = DEFAULT_MAX_UPLOAD
    embedder: str | None = None
    allowed_hosts: tuple[str, ...] = ()  # Host names answered besides the loopback ones ("*": any)
    forwarded_allow_ips: str | None = None  # proxies whose X-Forwarded-For/-Proto are believed (None: nobody)
    public_metrics: bool = False
    body_timeout: float = DEFAULT_BODY_TIMEOUT  # seconds a request body may take to arrive (0: no limit)
    header_timeout: float = DEFAULT_HEADER_TIMEOUT  # seconds a request head may take to arrive (0: no limit)
    search_concurrency: int = DEFAULT_SEARCH_CONCURRENCY  # searches at once (0: the thread pool's 40)
    log_probes: bool = False  # also log GET /readyz and /healthz in the access log (probes poll them)

    def check(self) -> None:
        if (self.store is None) == (self.url is None):
            raise ConfigError("serve needs exactly one of --store DIR or --url postgresql://...")
        if self.url is not None and not self.url.startswith(("postgresql://", "postgres://")):
            raise ConfigError("serve --url takes a PostgreSQL URL (postgresql://...)")
        if not self.auth and self.host not in LOOPBACK:
            raise ConfigError(f"--no-auth is only allowed on a loopback host ({', '.join(LOOPBACK)}), not {self.host}")
        if not 1 <= self.workers <= 64:
            raise ConfigError("--workers must be within [1, 64]")
        if self.rate < 0 or self.burst < 1:
            raise ConfigError("--rate-limit must be >= 0 (0: off) and --burst >= 1")
        if self.max_body < 1 or self.max_upload < 1:
            raise ConfigError("--max-body and --max-upload must be positive byte counts")
        if not 0 <= self.port <= 65535:
            raise ConfigError("--port must be within [0, 65535]")
        hosts = host_names(self.allowed_hosts)  # a malformed name fails here, in one line
        if not self.auth and ANY_HOST in hosts:
            raise ConfigError("--no-auth needs a Host allow-list: --allowed-host '*' is only allowed with API keys")
        if self.body_timeout < 0 or self.header_timeout < 0:
            raise ConfigError("--body-timeout and --header-timeout must be >= 0 seconds (0: no limit)")
        if self.search_concurrency < 0:
            raise ConfigError("--search-concurrency must be >= 0 (0: no limit of its own)")

    def hosts(self) -> tuple[str, ...]:
        """The Host names served: loopback, the --host interface when it names one, and --allowed-host."""
        bound = () if self.host in ("0.0.0.0", "::", "") else (self.host,)
        return (*bound, *self.allowed_hosts)


def open_memory(options: ServeOptions) -> LocalMemory:
    from omnimem.memory import LocalMemory

    extra: dict[str, Any] = {"embedder": options.embedder} if options.embedder else {}
    return LocalMemory(options.store, **extra) if options.store is not None else LocalMemory(url=options.url, **extra)


def build_app(options: ServeOptions) -> FastAPI:
    """Open the store and build the app (the store is closed with the server)."""
    memory = open_memory(options)
    limit = RateLimit(options.rate, options.burst) if options.rate > 0 else None
    return create_app(memory, auth=options.auth, rate_limit=limit, max_body=options.max_body,
                      max_upload=options.max_upload, close_memory=True, allowed_hosts=options.hosts(),
                      body_timeout=options.body_timeout or None, public_metrics=options.public_metrics,
                      search_concurrency=options.search_concurrency or None)


def app_from_env() -> FastAPI:
    """The uvicorn factory each worker calls."""
    raw = os.environ.get(ENV)
    if not raw:
        raise ConfigError(f"{ENV} is not set; start the server with `omnimem serve`")
    fields = json.loads(raw)
    fields["allowed_hosts"] = tuple(fields.get("allowed_hosts", ()))
    return build_app(ServeOptions(**fields))


PROBES = ("/readyz", "/healthz")


class ProbeFilter(logging.Filter):
    """Leaves readiness and liveness polls out of uvicorn's access log (a start polls /readyz once a second)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) < 3 or args[1] != "GET":  # uvicorn's access record: client, method, path, version, status
            return True
        return str(args[2]).split("?", 1)[0] not in PROBES


def log_config(options: ServeOptions) -> dict[str, Any]:
    """uvicorn's logging, with :class:`ProbeFilter` on its access log unless ``--log-probes``."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    if not options.log_probes:
        config.setdefault("filters", {})["probes"] = {"()": f"{__name__}.ProbeFilter"}
        config["handlers"]["access"]["filters"] = ["probes"]
    return config


def startup_message(options: ServeOptions, active_keys: int) -> str:
    """What ``omnimem serve`` says before it starts: where it listens, where the console is, how keys work,
    how it stops."""
    served = options.store if options.store is not None else "the database of --url"
    everywhere = options.host in ("0.0.0.0", "::", "")
    host = "127.0.0.1" if everywhere else f"[{options.host}]" if ":" in options.host else options.host
    port = str(options.port) if options.port else "PORT"  # --port 0: the system picks it (uvicorn's line names it)
    url = f"http://{host}:{port}"
    where = (f"every interface ({options.host or '0.0.0.0'}), port {port}: {url} from this machine" if everywhere
             else url)
    lines = [f"omnimem serves {served} on {where}" + ("; --port 0: the port is in uvicorn's line below"
                                                     if not options.port else ""),
             f"  web console: {url}/   API docs: {url}/docs   MCP: {url}/mcp/"]
    create = ("omnimem keys create --name me --role admin "
              + (f"--store {options.store}" if options.store is not None else "--url URL")
              + " (roles: read, write, admin; --user-id binds a key to one user)")
    if not options.auth:
        lines.append("  API keys: none needed (--no-auth): every request acts as a store-wide admin")
    elif active_keys:
        lines.append(f"  API keys: {active_keys} active; send one as 'Authorization: Bearer KEY', or paste it into "
                     f"the console's sign-in page; more: {create}")
    else:
        lines.append(f"  API keys: none yet, so every API call is refused (401) until you create one, with no "
                     f"restart: {create}")
    lines.append(f"  ready when {url}/readyz answers 200 (the embedding model loads first); Ctrl-C stops the server")
    return "\n".join(lines)


def serve(options: ServeOptions) -> None:
    """Run uvicorn until interrupted, after saying where (:func:`startup_message`, on stderr)."""
    import uvicorn

    options.check()
    os.environ[ENV] = json.dumps(asdict(options))
    with open_memory(options) as memory:  # a bad store or setting fails here, in one clear line, not in each worker
        active = sum(key.active for key in memory.store.list_keys()) if options.auth else 0
    print(startup_message(options, active), file=sys.stderr, flush=True)
    trusted = options.forwarded_allow_ips  # uvicorn's default would trust 127.0.0.1: here nobody unless named
    protocol: dict[str, Any] = {}
    if options.header_timeout:  # by import path: the worker processes build the class themselves
        os.environ[ENV_TIMEOUT] = repr(options.header_timeout)
        protocol["http"] = "omnimem.server.headtimeout:HeadTimeoutProtocol"
    uvicorn.run("omnimem.server.serve:app_from_env", factory=True, host=options.host, port=options.port,
                workers=options.workers, log_level="info", proxy_headers=trusted is not None,
                forwarded_allow_ips=trusted if trusted is not None else "", log_config=log_config(options),
                **protocol)
