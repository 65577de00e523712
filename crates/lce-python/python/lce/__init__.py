"""Canonical Lifecycle Events v1 from Python: the Rust lce crates.

Validate a run as an adapter yields it (`RunValidator`, `check`), sanitize
events (`sanitize`, `Limits`), and encode runs as Server-Sent Events with
the same bytes as `lce encode` (`Encoder`, `encode`, `encode_run`). Every
check and every byte comes from the Rust library; see README.md and the
type stubs (`__init__.pyi`).
"""

from lce._lce import (
    EncodeResult,
    Encoder,
    LceError,
    Limits,
    LimitsError,
    ParseError,
    Problem,
    Rejected,
    RunValidator,
    Violation,
    __version__,
    check,
    encode,
    encode_run,
    sanitize,
)

__all__ = [
    "EncodeResult",
    "Encoder",
    "LceError",
    "Limits",
    "LimitsError",
    "ParseError",
    "Problem",
    "Rejected",
    "RunValidator",
    "Violation",
    "__version__",
    "check",
    "encode",
    "encode_run",
    "sanitize",
]
