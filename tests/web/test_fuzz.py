"""Schema fuzzing of the web API (schemathesis): no input makes the server fail."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.result import Ok

from tests.support.processes import Process


def test_no_request_makes_a_server_error(web: Process, user_token: str) -> None:
    schema = schemathesis.openapi.from_url(f"http://127.0.0.1:{web.port}/openapi.json")
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"the API's own OpenAPI schema is invalid: {result}"
        operations.append(result.ok())
    assert len(operations) >= 7
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def fuzz(case: Any) -> None:
            for headers in ({"Authorization": f"Bearer {user_token}"}, {}):
                response = case.call(headers=headers, timeout=60)
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} {case.query} -> "
                                    f"{response.status_code}: {response.text[:300]}")

        fuzz()
    assert failures == []
