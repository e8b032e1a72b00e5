"""runtime/http1.py's connections over TLS with a client certificate, on uvloop's own TLS layer."""

from __future__ import annotations

from tests.runtime.test_tls_connections import (
    test_connections_are_counted_while_open_and_once_opened,
    tls,
)

__all__ = ["test_connections_are_counted_while_open_and_once_opened", "tls"]
