"""gateway_trace: call status and error code; (session_id, attempt, seq) unique.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("gateway_trace", sa.Column("status", sa.String(length=20), server_default="ok", nullable=False))
    op.add_column("gateway_trace", sa.Column("error_code", sa.String(length=100), nullable=True))
    op.drop_index("ix_gateway_trace_session_seq", table_name="gateway_trace")
    op.create_index("uq_gateway_trace_session_attempt_seq", "gateway_trace", ["session_id", "attempt", "seq"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("uq_gateway_trace_session_attempt_seq", table_name="gateway_trace")
    op.create_index("ix_gateway_trace_session_seq", "gateway_trace", ["session_id", "attempt", "seq"], unique=False)
    with op.batch_alter_table("gateway_trace") as batch:
        batch.drop_column("error_code")
        batch.drop_column("status")
