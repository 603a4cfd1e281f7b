"""Gateway traces: the record of one upstream call, and a session's merge into trajectories."""

from shared.traces.merge import MismatchCause, PrefixMismatch, SessionMerge, merge_session
from shared.traces.record import TraceRecord

__all__ = ["MismatchCause", "PrefixMismatch", "SessionMerge", "TraceRecord", "merge_session"]
