"""structlog set-up: JSON lines for machines, or a console view for people."""

from __future__ import annotations

import logging
import sys

import structlog

from coscheduler.runtime.settings import LogFormat, LogLevel

__all__ = ["configure_logging"]


def configure_logging(level: LogLevel, fmt: LogFormat) -> None:
    """Route structlog and the standard library's logging (aiohttp's, for one) alike."""
    numeric = logging.getLevelNamesMapping()[level.value.upper()]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if fmt is LogFormat.JSON
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            # Kopf's object loggers name the object in an extra field.
            foreign_pre_chain=[
                *shared,
                structlog.stdlib.add_logger_name,
                structlog.stdlib.ExtraAdder(allow=("k8s_ref",)),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(numeric, logging.INFO) if numeric < logging.INFO else numeric)
