"""runtime/http1.py's TLS session resumption on uvloop (whose TLS layer is its own)."""

from __future__ import annotations

from tests.runtime.test_tls_resumption import (
    test_a_new_connection_resumes_the_session_of_an_earlier_one,
    test_a_plain_context_opens_every_connection_with_a_full_handshake,
    test_connections_are_counted_while_open_and_once_opened,
    tickets,
)

__all__ = [
    "test_a_new_connection_resumes_the_session_of_an_earlier_one",
    "test_a_plain_context_opens_every_connection_with_a_full_handshake",
    "test_connections_are_counted_while_open_and_once_opened",
    "tickets",
]
