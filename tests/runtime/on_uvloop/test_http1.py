"""runtime/http1.py's key cases on uvloop (tests/runtime/test_http1.py's own, rerun here)."""

from __future__ import annotations

from tests.runtime.test_http1 import (
    raw,
    test_a_chunked_answer_is_read_whole,
    test_a_dropped_connection_is_an_error_and_is_not_reused,
    test_a_late_answer_times_out_and_is_never_read_as_the_next_ones,
    test_an_answer_that_ends_with_the_connection_is_read_to_its_end,
    test_answers_come_back_on_one_kept_alive_connection,
    test_bytes_beyond_the_answer_end_the_connection,
    test_connection_close_is_honoured,
    test_garbage_is_an_error_not_an_answer,
    test_only_an_idempotent_request_is_sent_again_when_a_kept_connection_drops,
    test_warmed_connections_carry_the_first_requests_without_opening_more,
)

__all__ = [
    "raw",
    "test_a_chunked_answer_is_read_whole",
    "test_a_dropped_connection_is_an_error_and_is_not_reused",
    "test_a_late_answer_times_out_and_is_never_read_as_the_next_ones",
    "test_an_answer_that_ends_with_the_connection_is_read_to_its_end",
    "test_answers_come_back_on_one_kept_alive_connection",
    "test_bytes_beyond_the_answer_end_the_connection",
    "test_connection_close_is_honoured",
    "test_garbage_is_an_error_not_an_answer",
    "test_only_an_idempotent_request_is_sent_again_when_a_kept_connection_drops",
    "test_warmed_connections_carry_the_first_requests_without_opening_more",
]
