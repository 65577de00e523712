//! The error answers the docs quote are the server's own bytes: every
//! [`ApiError`] is rendered as the router sends it, `docs/gateway.md` lists
//! each body byte for byte (and its table names every code), and every
//! error body quoted anywhere in the docs is one of them, member order and
//! spacing included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use axum::response::IntoResponse as _;
use http_body_util::BodyExt as _;
use lce_gateway::{ApiError, UpstreamErrorKind};

/// Every answer `ApiError` gives, in the order of `docs/gateway.md`'s list
/// (`invalid_id` with one field name: the others differ only there).
const ALL: [ApiError; 21] = [
    ApiError::MalformedJson,
    ApiError::InvalidRequest,
    ApiError::UnknownProtocol,
    ApiError::MissingAgent,
    ApiError::UnknownRun,
    ApiError::RunExists,
    ApiError::LogUnavailable,
    ApiError::BadLastEventId,
    ApiError::UnknownLastEventId,
    ApiError::Upstream(UpstreamErrorKind::UnknownAgent),
    ApiError::Upstream(UpstreamErrorKind::NothingToResume),
    ApiError::Upstream(UpstreamErrorKind::Unavailable),
    ApiError::IngestOff,
    ApiError::Unauthorized,
    ApiError::BadRun,
    ApiError::BodyTimeout,
    ApiError::BodyTooLarge,
    ApiError::NoRandomness,
    ApiError::Internal,
    ApiError::InvalidId {
        field: "conversation_id",
    },
    ApiError::Overloaded,
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each error's status and body, as the server sends them.
async fn rendered() -> Vec<(u16, String)> {
    let mut out = Vec::new();
    for e in ALL {
        let response = e.into_response();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        out.push((status, String::from_utf8(body.to_vec()).unwrap()));
    }
    out
}

/// The text between the first fence after `after` and its closing fence.
fn block_after<'a>(text: &'a str, after: &str) -> &'a str {
    let at = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
    let rest = &text[at..];
    let open = rest.find("```").unwrap();
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    &body[..body.find("```").unwrap()]
}

#[tokio::test]
async fn gateway_md_lists_every_error_body_byte_for_byte() {
    let doc = read(&root().join("docs/gateway.md"));
    let want: Vec<String> = rendered()
        .await
        .into_iter()
        .map(|(status, body)| format!("{status} {body}"))
        .collect();
    let quoted: Vec<&str> = block_after(&doc, "The bodies, byte for byte")
        .lines()
        .collect();
    assert_eq!(quoted, want, "docs/gateway.md's list of error bodies");

    // The table names every code, and only codes the server writes (rows
    // with a 4xx or 5xx status; backticked words of the last column).
    let codes: Vec<String> = ALL.iter().map(|e| e.code().to_owned()).collect();
    let table = &doc[doc.find("## Error answers").unwrap()..];
    let table = &table[..table.find("\n## ").unwrap()];
    let mut named = Vec::new();
    for row in table.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let (status, last) = (cells[cells.len() - 2], cells[cells.len() - 1]);
        if !(status.starts_with('4') || status.starts_with('5')) {
            continue;
        }
        for (i, token) in last.split('`').enumerate() {
            if i % 2 == 1 {
                assert!(codes.iter().any(|c| c == token), "table code `{token}`");
                named.push(token.to_owned());
            }
        }
    }
    for code in &codes {
        assert!(named.contains(code), "the table names no `{code}`");
    }
}

/// The object starting at `text[start]` (a `{`), to its matching `}`.
fn object_at(text: &str, start: usize) -> &str {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text[start..].char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[start..=start + i];
                }
            }
            _ => {}
        }
    }
    panic!("unclosed object at byte {start}");
}

/// The Markdown files that quote answers: README.md, docs/*.md and each
/// crate's README.md.
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "crates"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if dir == "docs" && path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            } else if path.join("README.md").is_file() {
                files.push(path.join("README.md"));
            }
        }
    }
    files.sort();
    files
}

#[tokio::test]
async fn every_quoted_error_body_is_one_the_server_writes() {
    let bodies: Vec<serde_json::Value> = rendered()
        .await
        .into_iter()
        .map(|(_, body)| serde_json::from_str(&body).unwrap())
        .collect();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        // An answer's body starts with `code` (an error) or `dropped` (a
        // push's summary): the server writes its members sorted, compact.
        for (start, _) in text
            .match_indices("{\"")
            .filter(|(i, _)| {
                let rest = &text[i + 1..];
                ["\"code\"", "\"error\"", "\"dropped\""]
                    .iter()
                    .any(|m| rest.starts_with(m))
            })
            // A member's value (`{"lce": {"error": ...}}`) is no answer.
            .filter(|(i, _)| !text[..*i].trim_end().ends_with(':'))
        {
            let quoted = object_at(&text, start);
            let place = format!("{}: {quoted}", file.display());
            let Ok(mut value) = serde_json::from_str::<serde_json::Value>(quoted) else {
                wrong.push(format!("{place}: not JSON"));
                continue;
            };
            // (Compared as text: `Value`'s own `PartialEq<str>` is a
            // string value's.)
            let written = value.to_string();
            if written.as_str() != quoted {
                wrong.push(format!("{place}: the server writes {written}"));
                continue;
            }
            checked += 1;
            if value.get("dropped").is_some() {
                continue;
            }
            // The push's failed summary adds the run's id to the body.
            value.as_object_mut().unwrap().remove("run_id");
            if !bodies.contains(&value) {
                wrong.push(format!("{place}: no ApiError writes this"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // gateway.md's list, the push's two, README's two, upstream.md's one.
    let at_least = ALL.len() + 2 + 2 + 1;
    assert!(checked >= at_least, "{checked}");
}

/// Every error has its own code, a JSON body, its status, and closes the
/// connection only when the rest of the body is never read.
#[test]
fn every_error_has_a_distinct_code_and_a_json_body() {
    use axum::http::header;
    let codes: std::collections::HashSet<_> = ALL.iter().map(|e| e.code()).collect();
    assert_eq!(codes.len(), ALL.len());
    for e in ALL {
        let response = e.into_response();
        assert_eq!(response.status(), e.status());
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let closes = response.headers().get(header::CONNECTION).is_some();
        assert_eq!(
            closes,
            matches!(e, ApiError::BodyTimeout | ApiError::BodyTooLarge)
        );
        assert!(e.to_string().starts_with(e.code()));
    }
}
