"""The client's key cases on uvloop: reads, watches, writes, refusals, through a CONNECT proxy."""

from __future__ import annotations

from tests.runtime.test_proxy import (
    _clean_proxy_environment,
    test_reads_watches_and_writes_tunnel_through_the_proxy,
)
from tests.runtime.test_transport import (
    test_a_refused_connection_is_unreachable,
    test_a_watch_refused_is_typed_too,
    test_each_refusal_is_its_type_with_the_servers_words,
    test_no_answer_is_unreachable_and_chained_to_the_http_error,
)

__all__ = [
    "_clean_proxy_environment",
    "test_a_refused_connection_is_unreachable",
    "test_a_watch_refused_is_typed_too",
    "test_each_refusal_is_its_type_with_the_servers_words",
    "test_no_answer_is_unreachable_and_chained_to_the_http_error",
    "test_reads_watches_and_writes_tunnel_through_the_proxy",
]
