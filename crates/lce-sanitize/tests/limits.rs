//! Loading limits: defaults, TOML, JSON, environment, validation, errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use lce_sanitize::{LimitSource, LimitsError, Sanitizer, load_limits, validate_limits};
use lce_types::Limits;

/// A file of the test's in a folder of its own, both removed when the test
/// is done with it: a run leaves nothing behind in the temp folder (and no
/// test removes a folder another is writing to).
struct TmpFile(PathBuf);

impl std::ops::Deref for TmpFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TmpFile {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TmpFile {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn tmp(name: &str, text: &str) -> TmpFile {
    let dir =
        std::env::temp_dir().join(format!("lce-sanitize-limits-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    TmpFile(p)
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_are_d19_and_valid() {
    let l = load_limits(None, Vec::new()).unwrap();
    assert_eq!(l, Limits::default());
    assert_eq!(l.identifier_bytes, 256);
    assert_eq!(l.name_bytes, 128);
    assert_eq!(l.display_bytes, 65536);
    assert_eq!(l.tool_arguments_bytes, 262144);
    assert_eq!(l.tool_result_bytes, 65536);
    assert_eq!(l.warning_details_bytes, 8192);
    assert_eq!(l.warning_details_depth, 4);
    assert_eq!(l.warning_details_members, 32);
    assert_eq!(l.metadata_keys, 32);
    assert_eq!(l.metadata_value_bytes, 1024);
    assert_eq!(l.metadata_allowlist.len(), 8);
    assert_eq!(l.namespace_depth, 8);
    assert_eq!(l.events_per_run, 1_000_000);
    assert_eq!(l.bytes_per_run, 256 * 1024 * 1024);
    assert!(Sanitizer::try_new(l).is_ok());
    // That there are 14 keys, one a field: `limits.rs`' own unit test.
}

#[test]
fn toml_file_then_env_overrides() {
    let p = tmp(
        "limits.toml",
        "# service settings\ntool_result_bytes = 1000\nmetadata_allowlist = [\"request_id\", \"region\"]\nbytes_per_run = 1_000_000\n",
    );
    let l = load_limits(
        Some(&p),
        env(&[
            ("PATH", "/usr/bin"),
            ("LCE_LIMIT_TOOL_RESULT_BYTES", "2000"),
            ("LCE_LIMIT_NAMESPACE_DEPTH", " 3 "),
            ("LCE_LIMIT_METADATA_ALLOWLIST", "request_id, model_version"),
        ]),
    )
    .unwrap();
    assert_eq!(l.tool_result_bytes, 2000);
    assert_eq!(l.bytes_per_run, 1_000_000);
    assert_eq!(l.namespace_depth, 3);
    assert_eq!(l.metadata_allowlist, vec!["request_id", "model_version"]);
    assert_eq!(l.name_bytes, 128);
    // An empty allowlist from the environment means no key is kept.
    let l = load_limits(None, env(&[("LCE_LIMIT_METADATA_ALLOWLIST", "")])).unwrap();
    assert!(l.metadata_allowlist.is_empty());
}

#[test]
fn json_file() {
    let p = tmp("limits.json", r#"{"name_bytes": 64, "events_per_run": 10}"#);
    let l = load_limits(Some(&p), Vec::new()).unwrap();
    assert_eq!((l.name_bytes, l.events_per_run), (64, 10));
}

#[test]
fn unknown_keys_are_rejected_everywhere() {
    let p = tmp("typo.toml", "tool_results_bytes = 5\n");
    let e = load_limits(Some(&p), Vec::new()).unwrap_err();
    assert!(
        matches!(&e, LimitsError::UnknownKey { key, source_: LimitSource::File(_) } if key == "tool_results_bytes"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("file {}: unknown key `tool_results_bytes`", p.display())
    );
    let p = tmp("typo.json", r#"{"nope": 1}"#);
    assert!(matches!(
        load_limits(Some(&p), Vec::new()),
        Err(LimitsError::UnknownKey { .. })
    ));
    let e = load_limits(None, env(&[("LCE_LIMIT_NOPE", "1")])).unwrap_err();
    assert!(
        matches!(&e, LimitsError::UnknownKey { source_: LimitSource::Env(n), .. } if n == "LCE_LIMIT_NOPE"),
        "{e}"
    );
    // A hostile key is never echoed whole.
    let long = "k".repeat(5000);
    let p = tmp("long.toml", &format!("{long} = 1\n"));
    let e = load_limits(Some(&p), Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("file {}: unknown key `<5000 byte key>`", p.display())
    );
}

#[test]
fn wrong_types_and_values_name_the_key_not_the_value() {
    let secret = "s3cr3t-".repeat(1000);
    let p = tmp("type.toml", &format!("display_bytes = \"{secret}\"\n"));
    let e = load_limits(Some(&p), Vec::new()).unwrap_err();
    assert!(
        matches!(
            &e,
            LimitsError::WrongType {
                key: "display_bytes",
                found: "string",
                ..
            }
        ),
        "{e}"
    );
    assert!(!e.to_string().contains("s3cr3t"));
    let p = tmp("neg.json", r#"{"display_bytes": -1}"#);
    assert!(matches!(
        load_limits(Some(&p), Vec::new()),
        Err(LimitsError::InvalidValue {
            key: "display_bytes",
            ..
        })
    ));
    let p = tmp("float.json", r#"{"display_bytes": 1.5}"#);
    assert!(matches!(
        load_limits(Some(&p), Vec::new()),
        Err(LimitsError::WrongType { found: "float", .. })
    ));
    let p = tmp("list.toml", "metadata_allowlist = [1]\n");
    assert!(matches!(
        load_limits(Some(&p), Vec::new()),
        Err(LimitsError::WrongType { .. })
    ));
    for bad in ["", "abc", "-5", "1e3", "99999999999999999999999"] {
        let e = load_limits(None, env(&[("LCE_LIMIT_DISPLAY_BYTES", bad)])).unwrap_err();
        assert!(
            matches!(
                &e,
                LimitsError::InvalidValue {
                    key: "display_bytes",
                    source_: LimitSource::Env(_),
                    ..
                }
            ),
            "{bad}: {e}"
        );
        if bad.len() > 3 {
            assert!(!e.to_string().contains(bad), "{e}");
        }
    }
    let e = load_limits(None, env(&[("LCE_LIMIT_METADATA_ALLOWLIST", "a,,b")])).unwrap_err();
    assert!(matches!(
        e,
        LimitsError::InvalidValue {
            key: "metadata_allowlist",
            ..
        }
    ));
}

#[test]
fn syntax_errors_and_files() {
    let p = tmp("bad.toml", "a = \n");
    assert!(matches!(
        load_limits(Some(&p), Vec::new()),
        Err(LimitsError::Syntax { line: 1, .. })
    ));
    let p = tmp("bad.json", "{\"name_bytes\": 1,\n \"name_bytes\": 2}");
    let e = load_limits(Some(&p), Vec::new()).unwrap_err();
    assert!(matches!(&e, LimitsError::Syntax { .. }), "{e}");
    let p = tmp("arr.json", "[1]");
    assert!(matches!(
        load_limits(Some(&p), Vec::new()),
        Err(LimitsError::Syntax { .. })
    ));
    let p = tmp("limits.yaml", "a: 1");
    assert!(matches!(
        load_limits(Some(&p), Vec::new()),
        Err(LimitsError::UnknownFormat { .. })
    ));
    let missing = std::env::temp_dir().join("lce-sanitize-no-such-file.toml");
    assert!(matches!(
        load_limits(Some(&missing), Vec::new()),
        Err(LimitsError::Io {
            kind: std::io::ErrorKind::NotFound,
            ..
        })
    ));
}

#[test]
fn validation() {
    let e = load_limits(None, env(&[("LCE_LIMIT_NAME_BYTES", "0")])).unwrap_err();
    assert!(
        matches!(
            e,
            LimitsError::InvalidValue {
                key: "name_bytes",
                ..
            }
        ),
        "{e}"
    );
    let e = load_limits(None, env(&[("LCE_LIMIT_IDENTIFIER_BYTES", "100000")])).unwrap_err();
    assert!(
        matches!(
            e,
            LimitsError::Inconsistent {
                smaller: "identifier_bytes",
                larger: "display_bytes",
                ..
            }
        ),
        "{e}"
    );
    let e = load_limits(None, env(&[("LCE_LIMIT_BYTES_PER_RUN", "1000")])).unwrap_err();
    assert!(
        matches!(
            e,
            LimitsError::Inconsistent {
                larger: "bytes_per_run",
                ..
            }
        ),
        "{e}"
    );
    let e = load_limits(None, env(&[("LCE_LIMIT_WARNING_DETAILS_DEPTH", "65")])).unwrap_err();
    assert!(
        matches!(
            e,
            LimitsError::Inconsistent {
                smaller: "warning_details_depth",
                ..
            }
        ),
        "{e}"
    );
    let mut l = Limits::default();
    l.metadata_allowlist.push("request_id".into());
    assert!(validate_limits(&l).is_err());
    let mut l = Limits::default();
    l.metadata_allowlist.push("bad\u{7}".into());
    assert!(validate_limits(&l).is_err());
    assert!(Sanitizer::try_new(l).is_err());
}
