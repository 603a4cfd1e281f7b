"""dedup signatures of cleaning jobs

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 10:35:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('dedup_signature',
    sa.Column('job_id', sa.Uuid(), nullable=False),
    sa.Column('sig', sa.LargeBinary(length=16), nullable=False),
    sa.Column('n', sa.Integer(), nullable=False),
    sa.Column('pos', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['cleaning_job.id'], name=op.f('fk_dedup_signature_job_id_cleaning_job'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('job_id', 'sig', name=op.f('pk_dedup_signature'))
    )


def downgrade() -> None:
    op.drop_table('dedup_signature')
