"""Type stubs of the `lce` package (the native module `lce._lce`)."""

from os import PathLike
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence, TypeVar, Union, final

__version__: str

#: One event: a JSON line (`str` or `bytes`, a final newline allowed) or a `dict`.
Event = Union[str, bytes, bytearray, dict[str, Any]]
#: Lines of one run: an iterable of items (each a line, or several lines of
#: text), or one `str`/`bytes` of JSON Lines. Read lazily.
Lines = Union[str, bytes, bytearray, Iterable[Event]]
Format = Literal["custom", "agui", "agui-v1"]
Mode = Literal["adapter", "full"]

_E = TypeVar("_E", str, bytes, dict[str, Any])

class LceError(ValueError):
    """The base of every lce error about the input."""

class Violation(LceError):
    """A run broke a rule of the contract."""

    #: The contract's rule number, or the name of a check that refines no
    #: numbered rule (`"run_identity"`).
    rule: Union[int, str]
    #: The stable id: `"1"`..`"15"` or `"X"`.
    rule_id: str
    #: The snake_case name of the rule or check (`"text_span"`).
    rule_name: str
    #: The decision the check refines its rule with (`"D4"`), if any.
    decision: Optional[str]
    #: The `sequence` of the event at which the break was detected.
    sequence: int
    #: That event's type (`None` for rule 12 on an empty run).
    event_type: Optional[str]
    #: The 1-based line, when known.
    line: Optional[int]
    #: The payload-free explanation (the message without `seq S: rule R`).
    detail: str

class Rejected(LceError):
    """The sanitizer rejected an event."""

    #: `"control_character"`, `"identifier_too_long"`, ...
    kind: str
    #: The decision the rule comes from (`"D17"`, `"D18"`, `"D19"`).
    decision: str
    #: The field's JSON path (`"data.tool_name"`).
    field: str
    index: Optional[int]
    size: Optional[int]
    limit: Optional[int]
    sequence: int
    event_type: str

class ParseError(LceError):
    """A line that is not a canonical event (strict parsing, D17)."""

    #: `"syntax"`, `"unknown_field"`, `"invalid_utf8"`, ...
    kind: str
    line: Optional[int]
    #: The JSON path of the offending member (`"$"`, `"data.delta"`).
    path: str
    #: The byte offset in the line, when known.
    offset: Optional[int]
    #: The message without its `line N:` prefix.
    detail: str

class LimitsError(LceError):
    """Bounds that could not be loaded."""

@final
class Limits:
    """The D19 bounds. `Limits()` are the defaults; keywords override them."""

    def __init__(
        self,
        *,
        identifier_bytes: int = ...,
        name_bytes: int = ...,
        display_bytes: int = ...,
        tool_arguments_bytes: int = ...,
        tool_result_bytes: int = ...,
        warning_details_bytes: int = ...,
        warning_details_depth: int = ...,
        warning_details_members: int = ...,
        metadata_keys: int = ...,
        metadata_value_bytes: int = ...,
        metadata_allowlist: Sequence[str] = ...,
        namespace_depth: int = ...,
        events_per_run: int = ...,
        bytes_per_run: int = ...,
    ) -> None: ...
    @staticmethod
    def load(
        path: Union[str, PathLike[str], None] = None,
        *,
        env: Optional[Mapping[str, str]] = None,
    ) -> Limits:
        """Defaults, then the TOML/JSON file, then `LCE_LIMIT_*` variables
        (of the process when `env` is None), as `lce encode --limits`."""
    def to_dict(self) -> dict[str, Any]: ...
    @property
    def identifier_bytes(self) -> int: ...
    @property
    def name_bytes(self) -> int: ...
    @property
    def display_bytes(self) -> int: ...
    @property
    def tool_arguments_bytes(self) -> int: ...
    @property
    def tool_result_bytes(self) -> int: ...
    @property
    def warning_details_bytes(self) -> int: ...
    @property
    def warning_details_depth(self) -> int: ...
    @property
    def warning_details_members(self) -> int: ...
    @property
    def metadata_keys(self) -> int: ...
    @property
    def metadata_value_bytes(self) -> int: ...
    @property
    def metadata_allowlist(self) -> list[str]: ...
    @property
    def namespace_depth(self) -> int: ...
    @property
    def events_per_run(self) -> int: ...
    @property
    def bytes_per_run(self) -> int: ...

@final
class RunValidator:
    """The contract's state machine over one run, one event at a time."""

    def __init__(
        self,
        mode: Mode = "adapter",
        ephemeral: bool = False,
        *,
        limits: Optional[Limits] = None,
        window: Optional[int] = None,
    ) -> None: ...
    def push(self, event: Event) -> None:
        """Raises `Violation` (or `ParseError`, `TypeError`)."""
    def push_json(self, line: Union[bytes, bytearray]) -> None:
        """`push` of one JSON line given as bytes (a final newline allowed),
        without the conversion: the fast path for an adapter that has its
        events serialized. Raises `Violation`, `ParseError` (whose `line` is
        the 1-based number of this `push_json` call) or `TypeError` (not
        bytes)."""
    def finish(self) -> None:
        """Raises `Violation` (rule 12) when the run has no terminal."""
    def clear_failure(self) -> None: ...
    @property
    def is_terminated(self) -> bool: ...
    @property
    def events(self) -> int: ...

@final
class Problem:
    """One problem of a run, as `lce check --all` reports it."""

    @property
    def line(self) -> int: ...
    @property
    def sequence(self) -> Optional[int]: ...
    @property
    def rule(self) -> Union[int, str]:
        """The rule number, the name of an unnumbered check, or `"parse"`."""
    @property
    def rule_name(self) -> str: ...
    @property
    def decision(self) -> Optional[str]: ...
    @property
    def kind(self) -> str:
        """`"violation"`, or the kind of parse error."""
    @property
    def event_type(self) -> Optional[str]: ...
    @property
    def message(self) -> str: ...

def check(
    lines: Lines,
    *,
    mode: Mode = "full",
    ephemeral: bool = False,
    window: Optional[int] = None,
    limits: Optional[Limits] = None,
) -> list[Problem]:
    """Every problem of one run (`lce check --all`); empty when valid."""

def sanitize(event: _E, limits: Optional[Limits] = None) -> _E:
    """The cleaned event, in the form given; raises `Rejected`."""

@final
class Encoder:
    """An SSE encoder for one run of valid events (no validation)."""

    def __init__(self, to: Format, agent_name: Optional[str] = None) -> None: ...
    def encode(self, event: Event) -> bytes: ...
    def idle(self) -> bytes:
        """What may go out while the producer has nothing ready (D13a)."""
    def finish(self) -> bytes: ...
    @property
    def format(self) -> str: ...

@final
class EncodeResult:
    """`encode_run`'s answer."""

    @property
    def data(self) -> bytes: ...
    @property
    def intervened(self) -> bool: ...
    @property
    def reason(self) -> Optional[str]:
        """`lce encode`'s message after `FILE:` (`LINE: message`)."""
    @property
    def line(self) -> Optional[int]: ...
    @property
    def cause(self) -> Optional[str]: ...
    @property
    def code(self) -> Optional[str]: ...
    @property
    def terminal(self) -> Optional[str]: ...
    def __bytes__(self) -> bytes: ...

def encode(
    lines: Lines,
    *,
    to: Format,
    agent_name: Optional[str] = None,
    ephemeral: bool = False,
    limits: Optional[Limits] = None,
) -> bytes:
    """A whole run through the coordinator: the bytes of `lce encode`."""

def encode_run(
    lines: Lines,
    *,
    to: Format,
    agent_name: Optional[str] = None,
    ephemeral: bool = False,
    limits: Optional[Limits] = None,
) -> EncodeResult:
    """`encode`, and whether the coordinator intervened."""
