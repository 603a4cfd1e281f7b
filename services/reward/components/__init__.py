"""Built-in reward components; importing this package registers them."""

from services.reward.components import answer, audit, bfcl, opd, penalties, skill, tool_call

__all__ = ["answer", "audit", "bfcl", "opd", "penalties", "skill", "tool_call"]
