"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-29 09:59:35.583603
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('api_key',
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('key_hash', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_key')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_key_key_hash'))
    )
    op.create_index(op.f('ix_api_key_prefix'), 'api_key', ['prefix'], unique=False)
    op.create_table('dataset',
    sa.Column('name', sa.String(length=300), nullable=False),
    sa.Column('row_count', sa.Integer(), nullable=False),
    sa.Column('invalid_count', sa.Integer(), nullable=False),
    sa.Column('meta', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dataset'))
    )
    op.create_table('gateway_trace',
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('api_key_id', sa.Uuid(), nullable=True),
    sa.Column('model', sa.String(length=300), nullable=False),
    sa.Column('endpoint', sa.String(length=100), nullable=False),
    sa.Column('upstream', sa.String(length=500), nullable=True),
    sa.Column('request', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('response', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('prompt_token_ids', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('completion_token_ids', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('logprobs', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('finish_reason', sa.String(length=40), nullable=True),
    sa.Column('usage', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('parse_statuses', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=True),
    sa.Column('retries', sa.Integer(), nullable=False),
    sa.Column('stream', sa.Boolean(), nullable=False),
    sa.Column('weight_version', sa.String(length=100), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_gateway_trace'))
    )
    op.create_index(op.f('ix_gateway_trace_created_at'), 'gateway_trace', ['created_at'], unique=False)
    op.create_index('ix_gateway_trace_session_seq', 'gateway_trace', ['session_id', 'attempt', 'seq'], unique=False)
    op.create_table('rollout_job',
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('total_groups', sa.Integer(), nullable=False),
    sa.Column('done_groups', sa.Integer(), nullable=False),
    sa.Column('counts', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rollout_job'))
    )
    op.create_table('task_execution',
    sa.Column('key', sa.String(length=400), nullable=False),
    sa.Column('task_name', sa.String(length=200), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('result', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_task_execution'))
    )
    op.create_table('cleaning_job',
    sa.Column('dataset_id', sa.Uuid(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('pipeline', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('options', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('kept', sa.Integer(), nullable=False),
    sa.Column('dropped', sa.Integer(), nullable=False),
    sa.Column('invalid', sa.Integer(), nullable=False),
    sa.Column('stats', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], name=op.f('fk_cleaning_job_dataset_id_dataset')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cleaning_job'))
    )
    op.create_index(op.f('ix_cleaning_job_dataset_id'), 'cleaning_job', ['dataset_id'], unique=False)
    op.create_table('dataset_row',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('dataset_id', sa.Uuid(), nullable=False),
    sa.Column('row_index', sa.Integer(), nullable=False),
    sa.Column('data', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], name=op.f('fk_dataset_row_dataset_id_dataset'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dataset_row')),
    sa.UniqueConstraint('dataset_id', 'row_index', name=op.f('uq_dataset_row_dataset_id_row_index'))
    )
    op.create_index(op.f('ix_dataset_row_dataset_id'), 'dataset_row', ['dataset_id'], unique=False)
    op.create_table('trajectory_group',
    sa.Column('job_id', sa.Uuid(), nullable=False),
    sa.Column('task_id', sa.String(length=300), nullable=False),
    sa.Column('shard_index', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('task', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('summary', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['rollout_job.id'], name=op.f('fk_trajectory_group_job_id_rollout_job'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_trajectory_group')),
    sa.UniqueConstraint('job_id', 'task_id', name=op.f('uq_trajectory_group_job_id_task_id'))
    )
    op.create_index(op.f('ix_trajectory_group_job_id'), 'trajectory_group', ['job_id'], unique=False)
    op.create_table('cleaned_row',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.Uuid(), nullable=False),
    sa.Column('row_index', sa.Integer(), nullable=False),
    sa.Column('outcome', sa.String(length=10), nullable=False),
    sa.Column('step', sa.String(length=100), nullable=True),
    sa.Column('reason', sa.String(length=200), nullable=True),
    sa.Column('data', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['cleaning_job.id'], name=op.f('fk_cleaned_row_job_id_cleaning_job'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cleaned_row')),
    sa.UniqueConstraint('job_id', 'row_index', name=op.f('uq_cleaned_row_job_id_row_index'))
    )
    op.create_index('ix_cleaned_row_job_outcome_reason', 'cleaned_row', ['job_id', 'outcome', 'reason'], unique=False)
    op.create_table('trajectory',
    sa.Column('job_id', sa.Uuid(), nullable=True),
    sa.Column('group_id', sa.Uuid(), nullable=True),
    sa.Column('task_id', sa.String(length=300), nullable=True),
    sa.Column('sample_index', sa.Integer(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('stop_reason', sa.String(length=30), nullable=True),
    sa.Column('truncated', sa.Boolean(), nullable=False),
    sa.Column('turns', sa.Integer(), nullable=False),
    sa.Column('messages', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('tools', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('prompt_ids', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('response_ids', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('loss_mask', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('logprobs', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('weight_version', sa.String(length=100), nullable=True),
    sa.Column('steps', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('meta', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['group_id'], ['trajectory_group.id'], name=op.f('fk_trajectory_group_id_trajectory_group'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['job_id'], ['rollout_job.id'], name=op.f('fk_trajectory_job_id_rollout_job'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_trajectory')),
    sa.UniqueConstraint('group_id', 'sample_index', 'attempt', name=op.f('uq_trajectory_group_id_sample_index_attempt'))
    )
    op.create_index(op.f('ix_trajectory_job_id'), 'trajectory', ['job_id'], unique=False)
    op.create_index(op.f('ix_trajectory_session_id'), 'trajectory', ['session_id'], unique=False)
    op.create_table('reward',
    sa.Column('trajectory_id', sa.Uuid(), nullable=False),
    sa.Column('component', sa.String(length=100), nullable=False),
    sa.Column('version', sa.String(length=40), nullable=False),
    sa.Column('params', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec_hash', sa.String(length=64), nullable=True),
    sa.Column('weight', sa.Float(), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('metrics', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['trajectory_id'], ['trajectory.id'], name=op.f('fk_reward_trajectory_id_trajectory'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_reward'))
    )
    op.create_index('ix_reward_trajectory_component', 'reward', ['trajectory_id', 'component'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_reward_trajectory_component', table_name='reward')
    op.drop_table('reward')
    op.drop_index(op.f('ix_trajectory_session_id'), table_name='trajectory')
    op.drop_index(op.f('ix_trajectory_job_id'), table_name='trajectory')
    op.drop_table('trajectory')
    op.drop_index('ix_cleaned_row_job_outcome_reason', table_name='cleaned_row')
    op.drop_table('cleaned_row')
    op.drop_index(op.f('ix_trajectory_group_job_id'), table_name='trajectory_group')
    op.drop_table('trajectory_group')
    op.drop_index(op.f('ix_dataset_row_dataset_id'), table_name='dataset_row')
    op.drop_table('dataset_row')
    op.drop_index(op.f('ix_cleaning_job_dataset_id'), table_name='cleaning_job')
    op.drop_table('cleaning_job')
    op.drop_table('task_execution')
    op.drop_table('rollout_job')
    op.drop_index('ix_gateway_trace_session_seq', table_name='gateway_trace')
    op.drop_index(op.f('ix_gateway_trace_created_at'), table_name='gateway_trace')
    op.drop_table('gateway_trace')
    op.drop_table('dataset')
    op.drop_index(op.f('ix_api_key_prefix'), table_name='api_key')
    op.drop_table('api_key')
