"""The shared schema: every service speaks these models."""

from shared.schema.env import Action, AgentStep, AgentTask, AgentTrajectory, Step, StepResult, to_observation_text
from shared.schema.errors import OpenAIError, OpenAIErrorBody, Problem
from shared.schema.jobs import JobProgress, JobStatus, Page, TeacherSpec
from shared.schema.messages import (
    ContentPart,
    FunctionCall,
    FunctionSpec,
    Message,
    Role,
    ToolCall,
    ToolInfo,
    content_text,
    dump_arguments,
)
from shared.schema.sampling import SamplingParams
from shared.schema.trajectory import (
    STOP_REASONS,
    RewardRecord,
    ScoredTrajectory,
    StepRecord,
    StopReason,
    TokenData,
    Trajectory,
)

__all__ = [
    "STOP_REASONS",
    "Action",
    "AgentStep",
    "AgentTask",
    "AgentTrajectory",
    "ContentPart",
    "FunctionCall",
    "FunctionSpec",
    "JobProgress",
    "JobStatus",
    "Message",
    "OpenAIError",
    "OpenAIErrorBody",
    "Page",
    "Problem",
    "RewardRecord",
    "ScoredTrajectory",
    "Role",
    "SamplingParams",
    "Step",
    "StepRecord",
    "StepResult",
    "to_observation_text",
    "StopReason",
    "TeacherSpec",
    "TokenData",
    "ToolCall",
    "ToolInfo",
    "Trajectory",
    "content_text",
    "dump_arguments",
]
