"""What one program run in a sandbox came to: status, exit, the exact streams, its cost."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from shared.sandbox.output import StreamEncoding, decode_stream, readable

__all__ = ["ExecFailure", "ExecStatus", "ExecutionResult"]

#: How a run can fail; the tools service's error kinds include every one of them.
ExecFailure = Literal[
    "nonzero_exit",
    "timeout",
    "cpu_limit",
    "memory_exceeded",
    "output_limit",
    "file_size_limit",
    "disk_limit",
    "inode_limit",
    "process_limit",
    "killed",
    "sandbox_error",
]
ExecStatus = Literal["ok", ExecFailure]


class ExecutionResult(BaseModel):
    """Outcome of one program run in a sandbox.

    ``stdout``/``stderr`` hold the stream's text when it is valid UTF-8 without
    NUL, else its exact bytes in base64, flagged by ``stdout_encoding`` /
    ``stderr_encoding`` (see ``sandbox_output``). ``stdout_text`` /
    ``stderr_text`` are the readable views either way. ``cpu_time_s`` and
    ``memory_peak_bytes`` cover every process of the call (its cgroup).
    """

    status: ExecStatus
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_encoding: StreamEncoding = "utf-8"
    stderr_encoding: StreamEncoding = "utf-8"
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_s: float = 0.0
    cpu_time_s: float | None = None
    memory_peak_bytes: int | None = None

    @property
    def ok(self) -> bool:
        """True when the program exited 0 within every limit."""
        return self.status == "ok"

    def stdout_bytes(self) -> bytes:
        """The exact bytes the program wrote to stdout (up to the cap)."""
        return decode_stream(self.stdout, self.stdout_encoding)

    def stderr_bytes(self) -> bytes:
        """The exact bytes the program wrote to stderr (up to the cap)."""
        return decode_stream(self.stderr, self.stderr_encoding)

    @property
    def stdout_text(self) -> str:
        """stdout for reading: unstorable bytes shown as escapes."""
        return self.stdout if self.stdout_encoding == "utf-8" else readable(self.stdout_bytes())

    @property
    def stderr_text(self) -> str:
        """stderr for reading: unstorable bytes shown as escapes."""
        return self.stderr if self.stderr_encoding == "utf-8" else readable(self.stderr_bytes())
