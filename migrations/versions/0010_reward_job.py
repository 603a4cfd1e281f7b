"""reward rows name their rollout job, so re-scoring progress reads only the reward service's own table

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("reward", sa.Column("job_id", sa.Uuid(), nullable=True))
    op.create_index(op.f("ix_reward_job_id"), "reward", ["job_id"])
    # Rows kept before this revision learn their job once, here.
    op.execute("UPDATE reward SET job_id = (SELECT trajectory.job_id FROM trajectory "
               "WHERE trajectory.id = reward.trajectory_id)")


def downgrade() -> None:
    op.drop_index(op.f("ix_reward_job_id"), table_name="reward")
    op.drop_column("reward", "job_id")
