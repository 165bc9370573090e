"""Schemathesis against the app's OpenAPI schema: generated requests never crash the server and
every response matches what the schema declares (status codes, content types, bodies)."""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from rlkit.human import LabelStore
from rlkit.human.app import create_app
from rlkit.human.settings import ServeConfig
from tests.fake_data import make_pairs, make_trajectories
from tests.web_client import client_for, login, open_phase

pytestmark = pytest.mark.server


def test_every_operation_honours_the_openapi_schema(tmp_path):
    source, _ = open_phase(tmp_path)
    source.store.add_queries(make_pairs(make_trajectories(), 5))
    # schemathesis's ASGI client sends Host: testserver, a name the app is told to accept
    app = create_app(LabelStore(tmp_path), ServeConfig(allowed_hosts=("testserver",)))
    client = client_for(app)
    headers = login(client, "schemathesis")
    cookies = dict(client.cookies)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {f"{op.method.upper()} {op.path}" for op in operations} >= {
        "GET /api/session", "POST /api/session", "GET /api/queue/next", "POST /api/labels",
        "POST /api/labels/undo", "GET /api/dashboard", "POST /api/m3hf/preview", "POST /api/m3hf/commit",
    }
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def honours_schema(case):
            # A label's value must be one of the store's levels and feedback must go to the open
            # phase: run-time facts the schema cannot list, so schema-valid data may get a 422/409.
            case.call_and_validate(headers=headers, cookies=cookies,
                                   excluded_checks=[positive_data_acceptance])

        honours_schema()
