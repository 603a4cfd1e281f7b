"""reward: one score per (trajectory, component, spec); specs stored by hash

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 10:30:00
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('reward_spec',
    sa.Column('spec_hash', sa.String(length=64), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('spec_hash', name=op.f('pk_reward_spec'))
    )
    with op.batch_alter_table('reward') as batch:
        batch.create_unique_constraint(op.f('uq_reward_trajectory_id_component_spec_hash'),
                                       ['trajectory_id', 'component', 'spec_hash'])


def downgrade() -> None:
    with op.batch_alter_table('reward') as batch:
        batch.drop_constraint(op.f('uq_reward_trajectory_id_component_spec_hash'), type_='unique')
    op.drop_table('reward_spec')
