//! The bundled fixtures, read for tests.

use std::path::{Path, PathBuf};

use lce_types::{Event, EventLines};

/// The workspace's `fixtures/` folder.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every run in `fixtures/scenarios/`, as `(file stem, events)`, sorted by
/// name. Panics on a file that cannot be read or a line that does not parse:
/// the scenarios are valid by construction, and a test should stop loudly.
#[allow(clippy::panic)]
pub fn scenarios() -> Vec<(String, Vec<Event>)> {
    let folder = dir().join("scenarios");
    let entries =
        std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let events = EventLines::new(&bytes[..])
                .map(|r| match r {
                    Ok(Ok(e)) => e,
                    Ok(Err(e)) => panic!("{}: {e}", p.display()),
                    Err(e) => panic!("{}: {e}", p.display()),
                })
                .collect();
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            (stem.unwrap_or_default(), events)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_scenario_is_read_in_order() {
        let all = super::scenarios();
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        let plain = all
            .iter()
            .find(|(n, _)| n == "plain-text-answer")
            .map(|(_, e)| e);
        let plain = plain.expect("plain-text-answer is bundled");
        assert_eq!(plain.first().map(|e| e.sequence), Some(0));
        assert!(plain.last().is_some_and(|e| e.event_type().is_terminal()));
    }
}
