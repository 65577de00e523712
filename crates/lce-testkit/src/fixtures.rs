//! The bundled fixtures, read for tests: the scenarios and the hostile
//! events.

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
    jsonl_files("scenarios")
        .into_iter()
        .map(|(stem, p)| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let events = EventLines::new(&bytes[..])
                .map(|r| match r {
                    Ok(Ok(e)) => e,
                    Ok(Err(e)) => panic!("{}: {e}", p.display()),
                    Err(e) => panic!("{}: {e}", p.display()),
                })
                .collect();
            (stem, events)
        })
        .collect()
}

/// Every file in `fixtures/hostile/` (one hostile event each, as its text,
/// unparsed: some tests check the text itself), as `(file stem, text)`,
/// sorted by name; the expected outcomes are the `.expect` files beside
/// them. Panics on a file that cannot be read, or when there are none (a
/// test over none would pass without checking anything).
#[allow(clippy::panic)]
pub fn hostile() -> Vec<(String, String)> {
    let all: Vec<(String, String)> = jsonl_files("hostile")
        .into_iter()
        .map(|(stem, p)| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (stem, text)
        })
        .collect();
    if all.is_empty() {
        panic!("no hostile fixtures in {}", dir().join("hostile").display());
    }
    all
}

/// The `.jsonl` files of `fixtures/<folder>/`, as `(file stem, path)`,
/// sorted by stem (`a` before `a-b`, which a sort by path would reverse).
#[allow(clippy::panic)]
fn jsonl_files(folder: &str) -> Vec<(String, PathBuf)> {
    let folder = dir().join(folder);
    let entries =
        std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| {
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            (stem.unwrap_or_default(), p)
        })
        .collect();
    files.sort();
    files
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

    #[test]
    fn every_hostile_event_is_read_in_order() {
        let all = super::hostile();
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(all.iter().all(|(_, text)| text.lines().count() == 1));
    }
}
