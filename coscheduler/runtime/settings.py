"""Settings of ``coscheduler run``, from flags and ``COSCHEDULER_*`` variables.

One typed group per concern; every field has a default and says its unit in
its name or description. Values are validated at start, so a bad one stops
the process with a message naming the setting, instead of surfacing later as
a strange scheduling result. Nested fields read ``COSCHEDULER_<GROUP>__<FIELD>``
(for example ``COSCHEDULER_CLIENT__QPS=200``).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum, StrEnum
from types import UnionType
from typing import Any, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from coscheduler.api.labels import DEFAULT_SCHEDULER_NAME
from coscheduler.core.preemption.mode import Mode as PreemptionMode
from coscheduler.core.strategy import Strategy

__all__ = [
    "BackoffSettings",
    "ClientSettings",
    "DashboardSettings",
    "EventLoop",
    "LeaderElectionSettings",
    "LogFormat",
    "LogLevel",
    "ServingSettings",
    "SettingDoc",
    "Settings",
    "documented_settings",
    "settings_table",
]


def _setting(
    flag: str, description: str, *, shown_default: str | None = None, **options: Any
) -> Any:
    """A setting's field: its flag of ``coscheduler run``, what it means, default, bounds.

    ``shown_default`` is the default in words, where the value itself says little.
    """
    extra: dict[str, JsonValue] = {"flag": flag}
    if shown_default is not None:
        extra["default_text"] = shown_default
    return Field(description=description, json_schema_extra=extra, **options)


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class LogFormat(StrEnum):
    JSON = "json"
    CONSOLE = "console"


class EventLoop(StrEnum):
    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClientSettings(_Group):
    """How hard coscheduler may talk to the API server."""

    qps: float = _setting(
        "--qps",
        "API requests per second, for scheduling (watches, bindings) and again, separately, "
        "for reporting (events, status), as kube-scheduler's event client",
        default=50.0,
        gt=0,
    )
    burst: int = _setting(
        "--burst", "API requests in a burst above --qps, for each as --qps", default=100, ge=1
    )
    bind_concurrency: int = _setting(
        "--bind-concurrency", "Binding requests in flight at once", default=64, ge=1, le=1024
    )
    request_timeout_seconds: float = _setting(
        "--request-timeout-seconds",
        "seconds before a request without an answer is given up",
        default=30.0,
        gt=0,
    )
    watch_timeout_seconds: int = _setting(
        "--watch-timeout-seconds",
        "server-side timeout of one watch request, in seconds",
        default=300,
        ge=10,
    )


class BackoffSettings(_Group):
    """Per-group retry delays after a failed attempt (doubling, capped)."""

    initial_seconds: float = _setting(
        "--backoff-initial-seconds",
        "first retry delay of a group that did not fit, in seconds",
        default=1.0,
        gt=0,
    )
    max_seconds: float = _setting(
        "--backoff-max-seconds", "longest retry delay, in seconds", default=10.0, gt=0
    )
    unschedulable_flush_seconds: float = _setting(
        "--unschedulable-flush-seconds",
        "seconds after which waiting groups are retried even when no cluster event seems "
        "able to help them",
        default=300.0,
        gt=0,
    )
    gather_seconds: float = _setting(
        "--gather-seconds",
        "seconds a group short of its minMember gathers members between two attempts; its "
        "last member is tried at once (0: try on every member's arrival)",
        default=1.0,
        ge=0,
    )

    @model_validator(mode="after")
    def _max_not_below_initial(self) -> Self:
        if self.max_seconds < self.initial_seconds:
            raise ValueError(
                f"backoff max_seconds ({self.max_seconds}) must not be below "
                f"initial_seconds ({self.initial_seconds})"
            )
        return self


def _default_identity() -> str:
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"


class LeaderElectionSettings(_Group):
    """The Lease that makes exactly one replica schedule and write status."""

    enabled: bool = _setting(
        "--leader-elect/--no-leader-elect",
        "hold a Lease to schedule, so that one replica of several does",
        default=True,
    )
    lease_name: str = _setting(
        "--lease-name", "the Lease's name", default="coscheduler", min_length=1
    )
    lease_namespace: str = _setting(
        "--lease-namespace", "the Lease's namespace", default="kube-system", min_length=1
    )
    identity: str = _setting(
        "--identity",
        "this replica's name in the Lease",
        min_length=1,
        shown_default="$POD_NAME, else host-pid",
        default_factory=_default_identity,
    )
    lease_duration_seconds: float = _setting(
        "--lease-duration-seconds",
        "seconds a standby waits after the last renewal before taking over",
        default=15.0,
        gt=0,
    )
    renew_deadline_seconds: float = _setting(
        "--renew-deadline-seconds",
        "seconds the leader keeps trying to renew before it stops",
        default=10.0,
        gt=0,
    )
    retry_period_seconds: float = _setting(
        "--retry-period-seconds",
        "seconds between two attempts to acquire or renew",
        default=2.0,
        gt=0,
    )

    @model_validator(mode="after")
    def _timings_are_ordered(self) -> Self:
        # The holder must give up before others may take over, and must try to
        # renew several times within its deadline: the order client-go checks.
        if not self.lease_duration_seconds > self.renew_deadline_seconds:
            raise ValueError(
                f"lease_duration_seconds ({self.lease_duration_seconds}) must be greater "
                f"than renew_deadline_seconds ({self.renew_deadline_seconds})"
            )
        if not self.renew_deadline_seconds > self.retry_period_seconds:
            raise ValueError(
                f"renew_deadline_seconds ({self.renew_deadline_seconds}) must be greater "
                f"than retry_period_seconds ({self.retry_period_seconds})"
            )
        return self


class ServingSettings(_Group):
    """The HTTP endpoint for /metrics, /healthz and /readyz."""

    address: str = _setting(
        "--metrics-address", "address of /metrics, /healthz, /readyz", default="0.0.0.0"
    )
    port: int = _setting(
        "--metrics-port",
        "port of /metrics, /healthz, /readyz; 0 picks a free one",
        default=10251,
        ge=0,
        le=65535,
    )


class DashboardSettings(_Group):
    """The read-only web page of queues, the line and the room (``coscheduler.dashboard``)."""

    enabled: bool = _setting(
        "--dashboard/--no-dashboard",
        "serve the read-only dashboard page on its own port (leader or standby)",
        default=False,
    )
    address: str = _setting(
        "--dashboard-address",
        "address of the dashboard; loopback, reached with kubectl port-forward",
        default="127.0.0.1",
    )
    port: int = _setting(
        "--dashboard-port",
        "port of the dashboard; 0 picks a free one",
        default=10252,
        ge=0,
        le=65535,
    )


class WebhookSettings(_Group):
    """Kopf's admission webhook server: PodGroup and Queue checks, pods' scheduler name."""

    address: str = _setting("--webhook-address", "address of the webhook server", default="0.0.0.0")
    port: int = _setting(
        "--webhook-port", "port of the webhook server (HTTPS)", default=9443, ge=1, le=65535
    )
    cert_dir: str | None = _setting(
        "--webhook-cert-dir",
        "directory holding the webhook server's tls.crt and tls.key (read again when rotated)",
        default=None,
        shown_default="no webhook server",
    )


class Settings(BaseSettings):
    """Everything ``coscheduler run`` can be told. Flags override the environment."""

    model_config = SettingsConfigDict(
        env_prefix="COSCHEDULER_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    kubeconfig: str | None = _setting(
        "--kubeconfig",
        "kubeconfig file (read by kubernetes_asyncio: certificates, tokens, exec plugins...)",
        default=None,
        shown_default="$KUBECONFIG (files merged), else in-cluster, else ~/.kube/config",
    )
    scheduler_name: str = _setting(
        "--scheduler-name",
        "the spec.schedulerName whose pods are scheduled",
        default=DEFAULT_SCHEDULER_NAME,
        min_length=1,
    )
    namespaces: tuple[str, ...] = _setting(
        "--namespace",
        "schedule the pods of these namespaces only",
        default=(),
        shown_default="all namespaces",
    )
    score_strategy: Strategy = _setting(
        "--score-strategy",
        "node ranking: pack (most-allocated) or spread (least-allocated)",
        default=Strategy.MOST_ALLOCATED,
    )
    preemption: PreemptionMode = _setting(
        "--preemption",
        "gang preemption: on (evict lower-priority gangs whole to place a waiting one), "
        "dry-run (only show, on the waiting group, what would be evicted) or off",
        default=PreemptionMode.ON,
    )
    usage_half_life_seconds: float = _setting(
        "--usage-half-life-seconds",
        "fair share over time: a queue's usage averaged over the recent past, decayed with "
        "this half-life, counts beside its usage when queues are ordered; 0 turns it off",
        default=0.0,
        ge=0,
    )
    kueue_queue: str = _setting(
        "--kueue-queue",
        "a Queue of ours that the gangs Kueue admits draw from too, its quota stacked on "
        "Kueue's; empty: they are left to Kueue's quota (our default queue)",
        default="",
        shown_default="none",
    )
    volume_bind_timeout_seconds: float = _setting(
        "--volume-bind-timeout-seconds",
        "seconds a gang's claims may take to bind before its members are bound; then retried",
        default=300.0,
        gt=0,
    )
    event_interval_seconds: float = _setting(
        "--event-interval-seconds",
        "seconds within which repeats of an event are counted, not written",
        default=30.0,
        ge=0,
    )
    log_level: LogLevel = _setting("--log-level", "least severe log level", default=LogLevel.INFO)
    log_format: LogFormat = _setting(
        "--log-format", "json lines, or console for people", default=LogFormat.JSON
    )
    event_loop: EventLoop = _setting(
        "--event-loop",
        "uvloop (sockets, TLS and timers in C, on libuv) or asyncio's own loop, a way out "
        "should uvloop misbehave; asyncio's where uvloop is not installed",
        default=EventLoop.UVLOOP,
    )
    client: ClientSettings = ClientSettings()
    backoff: BackoffSettings = BackoffSettings()
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    serving: ServingSettings = ServingSettings()
    dashboard: DashboardSettings = DashboardSettings()
    webhook: WebhookSettings = WebhookSettings()


@dataclass(frozen=True, slots=True)
class SettingDoc:
    """One setting as users meet it: its flag, variable, default and meaning."""

    path: tuple[str, ...]
    flag: str
    env: str
    help: str
    default: str
    kind: type
    choices: tuple[str, ...] | None
    repeatable: bool


def documented_settings() -> list[SettingDoc]:
    """Every setting, in declaration order: the single source of flags and docs."""
    return list(_walk(Settings, ()))


def settings_table() -> str:
    """The README's table of settings, generated so that it cannot drift."""
    rows = [
        "| flag | environment variable | default | meaning |",
        "|---|---|---|---|",
    ]
    for doc in documented_settings():
        flag = f"`{doc.flag}`" + (" (repeatable)" if doc.repeatable else "")
        env = f"`{doc.env}`" + (" (JSON list)" if doc.repeatable else "")
        rows.append(f"| {flag} | {env} | {doc.default} | {doc.help} |")
    return "\n".join(rows)


def _walk(model: type[BaseModel], prefix: tuple[str, ...]) -> Iterator[SettingDoc]:
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, _Group):
            yield from _walk(annotation, path)
            continue
        extra = field.json_schema_extra
        if not isinstance(extra, dict) or "flag" not in extra:
            raise TypeError(f"setting {'.'.join(path)} has no flag: give it one with _flag()")
        kind, choices, repeatable = _kind(annotation)
        default_text = extra.get("default_text")
        yield SettingDoc(
            path=path,
            flag=str(extra["flag"]),
            env="COSCHEDULER_" + "__".join(path).upper(),
            help=field.description or "",
            default=str(default_text) if default_text else _default_text(field.default),
            kind=kind,
            choices=choices,
            repeatable=repeatable,
        )


def _kind(annotation: object) -> tuple[type, tuple[str, ...] | None, bool]:
    """The flag's value type, its choices (enums) and whether it repeats (tuples)."""
    if get_origin(annotation) is tuple:
        return str, None, True
    if get_origin(annotation) in (Union, UnionType):
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return str, tuple(str(member.value) for member in annotation), False
    if isinstance(annotation, type):
        return annotation, None, False
    raise TypeError(f"no flag type for {annotation!r}")


def _default_text(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return f"`{value}`"
    return str(value)
