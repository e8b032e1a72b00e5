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
from enum import StrEnum
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from coscheduler.api.labels import DEFAULT_SCHEDULER_NAME
from coscheduler.core.strategy import Strategy

__all__ = [
    "BackoffSettings",
    "ClientSettings",
    "LeaderElectionSettings",
    "LogFormat",
    "LogLevel",
    "ServingSettings",
    "Settings",
]


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class LogFormat(StrEnum):
    JSON = "json"
    CONSOLE = "console"


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClientSettings(_Group):
    """How hard coscheduler may talk to the API server."""

    qps: Annotated[
        float,
        Field(
            gt=0,
            description=(
                "sustained requests per second, for scheduling (watches, bindings) and "
                "separately for reporting (events, status), as kube-scheduler's event client"
            ),
        ),
    ] = 50.0
    burst: Annotated[int, Field(ge=1, description="requests allowed at once above qps")] = 100
    bind_concurrency: Annotated[
        int, Field(ge=1, le=1024, description="Binding requests in flight at once")
    ] = 64
    request_timeout_seconds: Annotated[float, Field(gt=0)] = 30.0
    watch_timeout_seconds: Annotated[
        int, Field(ge=10, description="server-side timeout of one watch request")
    ] = 300


class BackoffSettings(_Group):
    """Per-group retry delays after a failed attempt (doubling, capped)."""

    initial_seconds: Annotated[float, Field(gt=0)] = 1.0
    max_seconds: Annotated[float, Field(gt=0)] = 10.0
    #: Groups parked as unschedulable are retried at least this often even
    #: when no cluster event seems able to help them.
    unschedulable_flush_seconds: Annotated[float, Field(gt=0)] = 60.0

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

    enabled: bool = True
    lease_name: Annotated[str, Field(min_length=1)] = "coscheduler"
    lease_namespace: Annotated[str, Field(min_length=1)] = "kube-system"
    identity: Annotated[str, Field(min_length=1)] = Field(default_factory=_default_identity)
    lease_duration_seconds: Annotated[float, Field(gt=0)] = 15.0
    renew_deadline_seconds: Annotated[float, Field(gt=0)] = 10.0
    retry_period_seconds: Annotated[float, Field(gt=0)] = 2.0

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

    address: str = "0.0.0.0"
    port: Annotated[int, Field(ge=0, le=65535, description="0 picks a free port")] = 10251


class Settings(BaseSettings):
    """Everything ``coscheduler run`` can be told. Flags override the environment."""

    model_config = SettingsConfigDict(
        env_prefix="COSCHEDULER_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    scheduler_name: Annotated[str, Field(min_length=1)] = DEFAULT_SCHEDULER_NAME
    #: Namespaces whose pods are scheduled; empty means all.
    namespaces: tuple[str, ...] = ()
    kubeconfig: str | None = None
    score_strategy: Strategy = Strategy.MOST_ALLOCATED
    log_level: LogLevel = LogLevel.INFO
    log_format: LogFormat = LogFormat.JSON
    #: Minimum seconds between two FailedScheduling events for the same pod
    #: or group with the same message.
    event_interval_seconds: Annotated[float, Field(ge=0)] = 30.0
    client: ClientSettings = ClientSettings()
    backoff: BackoffSettings = BackoffSettings()
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    serving: ServingSettings = ServingSettings()
