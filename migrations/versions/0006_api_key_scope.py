"""api_key: scope (admin | user | session) and the session a session key opens.

Keys that exist before this revision become ``admin``: they were all-powerful
until now, and an upgrade must not lock their owners out of the routes that
became admin-only. Keys created afterwards default to ``user``.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Added with an admin default (fills existing rows), then the default becomes user.
    op.add_column("api_key", sa.Column("scope", sa.String(16), nullable=False, server_default="admin"))
    op.add_column("api_key", sa.Column("session_id", sa.String(400), nullable=True))
    with op.batch_alter_table("api_key") as batch:
        batch.alter_column("scope", server_default="user", existing_type=sa.String(16), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("api_key") as batch:
        batch.drop_column("session_id")
        batch.drop_column("scope")
