"""trajectories keep a copy of their newest reward total, so the rollout service never reads the reward table

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The newest ``total`` row of the trajectory, as the rollout's listings read it before this revision.
_NEWEST_TOTAL = ("SELECT reward.score FROM reward WHERE reward.trajectory_id = trajectory.id "
                 "AND reward.component = 'total' ORDER BY reward.created_at DESC LIMIT 1")


def upgrade() -> None:
    op.add_column("trajectory", sa.Column("reward", sa.Float(), nullable=True))
    # Trajectories scored before this revision get their copy once, here (the one place both tables meet).
    op.execute(f"UPDATE trajectory SET reward = ({_NEWEST_TOTAL}) "
               "WHERE EXISTS (SELECT 1 FROM reward WHERE reward.trajectory_id = trajectory.id "
               "AND reward.component = 'total')")


def downgrade() -> None:
    op.drop_column("trajectory", "reward")
