//! [`ScenarioPlayer`]: recorded runs played as live ones (`lce serve
//! --scenarios DIR`). A start plays `DIR/<agent_id>.jsonl`, a resume plays
//! the scenario `DIR/resume.json` maps `agent_id` to; each play gets the
//! request's run and conversation ids, so plays never collide in the log;
//! the player accepts every cancel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use futures::future::BoxFuture;
use lce_stream::LceError;
use lce_types::{Event, EventLines};

use super::run::{EventStream, Forwarded, RunInput, RunRequest, Upstream, UpstreamError};

/// The built-in upstream: recorded runs played as live ones.
#[derive(Debug, Clone)]
pub struct ScenarioPlayer {
    scenarios: HashMap<String, Arc<Vec<Event>>>,
    /// `resume.json`: interrupted scenario → the scenario that continues it.
    resumes: HashMap<String, String>,
    speed: f64,
}

/// Why a scenarios folder cannot be played. Names the file, and the line
/// where a line is not a canonical event.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A file or the folder could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A line of a scenario is not a canonical event.
    #[error("{path}:{error}")]
    Parse {
        /// The scenario file.
        path: PathBuf,
        /// The parser's error (it names the line).
        error: lce_types::ParseError,
    },
    /// The folder holds no `*.jsonl` scenario.
    #[error("no *.jsonl scenarios in {0}")]
    Empty(PathBuf),
    /// `resume.json` is not a JSON object of scenario names, or maps to a
    /// scenario that does not exist.
    #[error("{path}: {message}")]
    Resume {
        /// The `resume.json` file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl ScenarioPlayer {
    /// Loads `DIR/*.jsonl` and `DIR/resume.json` (optional); `speed` divides
    /// the recorded gaps between events (0 = no pauses; each at most 5 s).
    pub fn load(dir: impl AsRef<Path>, speed: f64) -> Result<ScenarioPlayer, ScenarioError> {
        let dir = dir.as_ref();
        let scenarios = load_scenarios(dir)?;
        let resume_file = dir.join("resume.json");
        let resumes = match std::fs::read(&resume_file) {
            Ok(bytes) => {
                serde_json::from_slice::<HashMap<String, String>>(&bytes).map_err(|e| {
                    ScenarioError::Resume {
                        path: resume_file.clone(),
                        message: format!("not a JSON object of scenario names: {e}"),
                    }
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(source) => {
                return Err(ScenarioError::Io {
                    path: resume_file,
                    source,
                });
            }
        };
        for (from, to) in &resumes {
            if !scenarios.contains_key(to) {
                return Err(ScenarioError::Resume {
                    path: resume_file,
                    message: format!("{from:?} resumes with {to:?}, which is not a scenario"),
                });
            }
        }
        Ok(ScenarioPlayer {
            scenarios,
            resumes,
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                0.0
            },
        })
    }

    /// The scenario named `agent_id`.
    pub fn scenario(&self, agent_id: &str) -> Option<Arc<Vec<Event>>> {
        self.scenarios.get(agent_id).cloned()
    }

    fn open_run(&self, request: &RunRequest) -> Result<EventStream, UpstreamError> {
        let name = match &request.input {
            RunInput::Message(_) => request.agent_id.as_str(),
            RunInput::Resume(_) => self
                .resumes
                .get(&request.agent_id)
                .map(String::as_str)
                .ok_or(UpstreamError::NoResume)?,
        };
        let scenario = self.scenario(name).ok_or(UpstreamError::UnknownAgent)?;
        Ok(Box::pin(paced(
            scenario,
            self.speed,
            request.run_id.clone(),
            request.conversation_id.clone(),
        )))
    }
}

impl Upstream for ScenarioPlayer {
    fn open(&self, request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>> {
        Box::pin(std::future::ready(self.open_run(&request)))
    }

    fn cancel<'a>(&'a self, _run_id: &'a str, _forwarded: &'a Forwarded) -> BoxFuture<'a, bool> {
        Box::pin(std::future::ready(true))
    }
}

/// Every `*.jsonl` of `dir` by its name without the extension.
fn load_scenarios(dir: &Path) -> Result<HashMap<String, Arc<Vec<Event>>>, ScenarioError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ScenarioError::Io { path, source }
    };
    let mut map = HashMap::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let file = std::fs::File::open(&path).map_err(io(&path))?;
        let mut events = Vec::new();
        for item in EventLines::new(std::io::BufReader::new(file)) {
            let parsed = item.map_err(io(&path))?;
            events.push(parsed.map_err(|error| ScenarioError::Parse {
                path: path.clone(),
                error,
            })?);
        }
        map.insert(name, Arc::new(events));
    }
    if map.is_empty() {
        return Err(ScenarioError::Empty(dir.to_owned()));
    }
    Ok(map)
}

/// Plays `scenario` with ids rewritten, sleeping between events as their
/// timestamps say, divided by `speed` (0 = no pacing), each wait capped at 5 s.
fn paced(
    scenario: Arc<Vec<Event>>,
    speed: f64,
    run_id: String,
    conversation_id: String,
) -> impl Stream<Item = Result<Event, LceError>> + Send + 'static {
    let (run_id, conversation_id): (Arc<str>, Arc<str>) = (run_id.into(), conversation_id.into());
    futures::stream::unfold(0usize, move |i| {
        let scenario = scenario.clone();
        let (run_id, conversation_id) = (run_id.clone(), conversation_id.clone());
        async move {
            let mut event = scenario.get(i)?.clone();
            if let Some(pause) = i
                .checked_sub(1)
                .and_then(|p| gap(scenario.get(p)?, &event, speed))
            {
                tokio::time::sleep(pause).await;
            }
            event.run_id = run_id;
            event.conversation_id = conversation_id;
            Some((Ok(event), i + 1))
        }
    })
}

/// The recorded gap from `prev` to `next`, divided by `speed`, at most 5 s;
/// `None` without pacing or without a gap.
fn gap(prev: &Event, next: &Event, speed: f64) -> Option<Duration> {
    if speed <= 0.0 {
        return None;
    }
    let gap_ms = next
        .timestamp
        .unix_millis()
        .saturating_sub(prev.timestamp.unix_millis());
    #[allow(clippy::cast_precision_loss)]
    let secs = (gap_ms.max(0) as f64 / 1000.0 / speed).min(5.0);
    (secs > 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios")
    }

    #[tokio::test]
    async fn a_play_carries_the_requests_ids_and_resumes_follow_resume_json() {
        let player = ScenarioPlayer::load(fixtures(), 0.0).unwrap();
        let request = RunRequest::new(
            "run-x",
            "conv-x",
            "plain-text-answer",
            RunInput::Message("hi".into()),
        );
        let events: Vec<_> = player.open(request).await.unwrap().collect().await;
        assert!(!events.is_empty());
        for e in &events {
            let e = e.as_ref().unwrap();
            assert_eq!((&*e.run_id, &*e.conversation_id), ("run-x", "conv-x"));
        }
        let unknown = RunRequest::new("r", "c", "no-such-agent", RunInput::Message(String::new()));
        assert!(matches!(
            player.open(unknown).await,
            Err(UpstreamError::UnknownAgent)
        ));
        let resume = RunRequest::new("r", "c", "plain-text-answer", RunInput::Resume("{}".into()));
        assert!(matches!(
            player.open(resume).await,
            Err(UpstreamError::NoResume)
        ));
        assert!(player.cancel("r", &Forwarded::default()).await);
    }

    #[test]
    fn a_folder_without_scenarios_is_refused_by_name() {
        let err = ScenarioPlayer::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 1.0)
            .unwrap_err();
        assert!(matches!(err, ScenarioError::Empty(_)), "{err}");
        let err = ScenarioPlayer::load("/nonexistent-lce-dir", 1.0).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot read /nonexistent-lce-dir"),
            "{err}"
        );
    }
}
