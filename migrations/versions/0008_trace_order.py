"""gateway_trace: the database orders a session's calls; the per-replica slot index goes.

Every row gets ``log_id``, a number the database assigns at insert (a Postgres
sequence; on SQLite the row id, filled by a trigger). A session's calls are read
in (attempt, created_at, log_id) order, so several gateway replicas can append to
one session: nothing depends on a counter kept in one gateway process, and a
record never collides with another replica's (the unique (session_id, attempt,
seq) index that made colliding rows take a round trip to find a free slot is dropped).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEQUENCE = "gateway_trace_log_id_seq"
_TRIGGER = "gateway_trace_log_id_fill"
_ORDER_INDEX = "ix_gateway_trace_session_order"


def upgrade() -> None:
    op.drop_index("uq_gateway_trace_session_attempt_seq", table_name="gateway_trace")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"CREATE SEQUENCE {_SEQUENCE}")
        # A volatile default: existing rows each take the next number as the column is added.
        op.add_column("gateway_trace", sa.Column("log_id", sa.BigInteger(), nullable=True,
                                                 server_default=sa.text(f"nextval('{_SEQUENCE}')")))
        op.execute(f"ALTER SEQUENCE {_SEQUENCE} OWNED BY gateway_trace.log_id")
    else:
        op.add_column("gateway_trace", sa.Column("log_id", sa.BigInteger(), nullable=True))
        op.execute("UPDATE gateway_trace SET log_id = rowid")
        op.execute(f"CREATE TRIGGER {_TRIGGER} AFTER INSERT ON gateway_trace WHEN NEW.log_id IS NULL "
                   "BEGIN UPDATE gateway_trace SET log_id = NEW.rowid WHERE rowid = NEW.rowid; END")
    op.create_index(_ORDER_INDEX, "gateway_trace", ["session_id", "attempt", "created_at", "log_id"], unique=False)


def downgrade() -> None:
    op.drop_index(_ORDER_INDEX, table_name="gateway_trace")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_column("gateway_trace", "log_id")  # drops the sequence it owns
    else:
        op.execute(f"DROP TRIGGER IF EXISTS {_TRIGGER}")
        with op.batch_alter_table("gateway_trace") as batch:
            batch.drop_column("log_id")
    # Rows appended by several replicas may share a replica-local seq: renumber before the index returns.
    op.execute(
        "UPDATE gateway_trace SET seq = ranked.n FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY session_id, attempt "
        "ORDER BY created_at, id) - 1 AS n FROM gateway_trace WHERE session_id IS NOT NULL) AS ranked "
        "WHERE gateway_trace.id = ranked.id")
    op.create_index("uq_gateway_trace_session_attempt_seq", "gateway_trace", ["session_id", "attempt", "seq"],
                    unique=True)
