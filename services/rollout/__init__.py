"""Rollout engines: message- and token-level multi-turn rollouts, groups, agents, processors."""

from services.rollout.api_rollout import APIMultiTurnRollout
from services.rollout.bridge import TokenBridge
from services.rollout.engine import AsyncRolloutEngine, CutMember, GroupResult
from services.rollout.microbatch import MicroBatcher
from services.rollout.ports import (
    BatchPolicy,
    ChatTokenizer,
    ParsedCall,
    Policy,
    PolicyOutput,
    ToolCallParser,
    ToolExecutor,
    ToolResult,
)
from services.rollout.processors import (
    ROLLOUT_ERROR_PREFIX,
    ProcessorRuntime,
    ProcessorSpec,
    RolloutInput,
    RolloutOutput,
    load_processor,
)
from services.rollout.protocol import API, OpenAI
from services.rollout.rollout_base import Rollout
from services.rollout.token_rollout import MultiTurnRollout
from services.rollout.traces import TraceWriter
from shared.schema.budgets import ParseFailurePolicy, RolloutLimits

__all__ = [
    "API",
    "ROLLOUT_ERROR_PREFIX",
    "APIMultiTurnRollout",
    "AsyncRolloutEngine",
    "BatchPolicy",
    "ChatTokenizer",
    "CutMember",
    "GroupResult",
    "MicroBatcher",
    "MultiTurnRollout",
    "ParseFailurePolicy",
    "ParsedCall",
    "Policy",
    "PolicyOutput",
    "OpenAI",
    "ProcessorRuntime",
    "ProcessorSpec",
    "Rollout",
    "RolloutInput",
    "RolloutLimits",
    "RolloutOutput",
    "TokenBridge",
    "ToolCallParser",
    "ToolExecutor",
    "ToolResult",
    "TraceWriter",
    "load_processor",
]
