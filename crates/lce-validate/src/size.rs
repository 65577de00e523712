//! The canonical JSON size of an event, without building the JSON.

use lce_types::Event;

/// An `io::Write` that only counts.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length in bytes of [`Event::to_json`] (compact canonical JSON, no
/// newline), computed by serializing into a counter: no allocation.
pub(crate) fn canonical_size(event: &Event) -> u64 {
    let mut c = Counter(0);
    // Serializing our own types cannot fail (see `Event::to_json`); if it
    // ever did, the bytes counted so far are a lower bound.
    let _ = serde_json::to_writer(&mut c, event);
    c.0
}
