"""The health server's key cases on uvloop (tests/runtime/test_serving.py's own, rerun here)."""

from __future__ import annotations

from tests.runtime.test_serving import (
    server,
    state,
    test_garbage_is_a_bad_request,
    test_only_gets_and_a_closing_client_is_let_go,
    test_pipelined_requests_are_answered_in_order,
    test_probes_and_metrics_on_one_kept_alive_connection,
)

__all__ = [
    "server",
    "state",
    "test_garbage_is_a_bad_request",
    "test_only_gets_and_a_closing_client_is_let_go",
    "test_pipelined_requests_are_answered_in_order",
    "test_probes_and_metrics_on_one_kept_alive_connection",
]
