"""What only PostgresPlanStorage has: a pool of the caller's, and a server that is not there.
(The contract every storage meets is tests/state/test_plan_storage.py, run on PostgreSQL too.)"""

from __future__ import annotations

import pytest

from replan.state.plans import PlanConflict, PlanStorageError, PlanUpdate


def test_a_pool_given_to_the_storage_is_used_and_left_open(postgres_url: str) -> None:
    from psycopg_pool import ConnectionPool

    from replan.state.plans import PostgresPlanStorage

    with ConnectionPool(postgres_url, min_size=1, max_size=2) as pool:  # not in autocommit mode
        storage = PostgresPlanStorage(pool)
        created = storage.upsert(PlanUpdate(name="pooled", content="one", expected_revision=0))
        with pytest.raises(PlanConflict):
            storage.upsert(PlanUpdate(name="pooled", content="two", expected_revision=0))
        assert storage.list().plans == [created.summary()]
        storage.close()
        assert not pool.closed
        with pool.connection() as conn:
            assert conn.execute("SELECT revision FROM replan_plans").fetchall() == [(1,)]
    with PostgresPlanStorage(postgres_url) as by_url:
        assert by_url.get("pooled") == created


def test_a_server_that_does_not_answer_is_a_storage_error_without_the_password() -> None:
    pytest.importorskip("psycopg")
    from replan.state.plans import PostgresPlanStorage

    with pytest.raises(PlanStorageError) as caught:
        PostgresPlanStorage("postgresql://planner:s3cret@127.0.0.1:1/plans")
    message = str(caught.value)
    assert message.startswith("plan storage in database 'plans' on 127.0.0.1 failed: ")
    assert "Connection refused" in message and "s3cret" not in message
