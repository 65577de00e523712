//! The wire formats: one enum names them.

/// The three wire formats lce encodes: the one name of each, used by the
/// command line, requests, golden paths and `Content-Type`s.
///
/// Exhaustive on purpose: a program that serves formats matches on it, and a
/// new format (a breaking release) should make that match fail to compile
/// rather than fall into a default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireFormat {
    /// DA's `custom` protocol.
    Custom,
    /// DA's AG-UI dialect.
    Agui,
    /// Standard AG-UI 1.0.
    AguiV1,
}

impl WireFormat {
    /// Every format.
    pub const ALL: [WireFormat; 3] = [WireFormat::Custom, WireFormat::Agui, WireFormat::AguiV1];

    /// The name used on the command line, in requests and in golden paths.
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Custom => "custom",
            WireFormat::Agui => "agui",
            WireFormat::AguiV1 => "agui-v1",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The `Content-Type` of a response in this format (wire-formats §2).
    pub fn content_type(self) -> &'static str {
        match self {
            WireFormat::Custom | WireFormat::Agui => "text/event-stream; charset=utf-8",
            WireFormat::AguiV1 => "text/event-stream",
        }
    }
}

impl std::fmt::Display for WireFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
