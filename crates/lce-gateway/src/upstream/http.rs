//! [`HttpUpstream`]: a harness over plain HTTP/1.1 (`docs/upstream.md`).
//!
//! A start or resume is `POST URL/runs` with `{run_id, conversation_id,
//! agent_id, message | resume_data, client_context}`; the answer's body is
//! read as canonical JSON Lines (`application/x-ndjson`) or as SSE whose
//! `data:` lines are canonical events (`text/event-stream`), as it arrives.
//! Cancel is `POST URL/runs/{run_id}/cancel`. Plain `http://` only.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, Uri, header};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use hyper_util::rt::TokioIo;
use lce_stream::LceError;
use lce_types::Event;

use super::run::{EventStream, Forwarded, RunInput, RunRequest, Upstream, UpstreamError};

/// A harness over plain HTTP/1.1.
#[derive(Debug, Clone)]
pub struct HttpUpstream {
    /// `host:port`.
    authority: String,
    /// The URL's path, without a trailing `/` (`""` for the root).
    base_path: String,
    /// Bound on connecting and on receiving the answer's header.
    timeout: Duration,
}

/// An upstream URL that is not `http://HOST:PORT[/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the upstream must be http://HOST:PORT[/PATH] (no user, no query)")]
pub struct InvalidUpstreamUrl;

impl HttpUpstream {
    /// The harness at `http://HOST:PORT[/PATH]`; `timeout` bounds connecting
    /// and receiving an answer's header.
    pub fn new(url: &str, timeout: Duration) -> Result<HttpUpstream, InvalidUpstreamUrl> {
        let uri: Uri = url.parse().map_err(|_| InvalidUpstreamUrl)?;
        if uri.scheme_str() != Some("http") || uri.query().is_some() {
            return Err(InvalidUpstreamUrl);
        }
        let authority = uri.authority().ok_or(InvalidUpstreamUrl)?;
        if authority.as_str().contains('@') {
            return Err(InvalidUpstreamUrl);
        }
        let port = authority.port_u16().unwrap_or(80);
        Ok(HttpUpstream {
            authority: format!("{}:{port}", authority.host()),
            base_path: uri.path().trim_end_matches('/').to_owned(),
            timeout,
        })
    }

    /// Sends one request and returns the answer's head and body.
    async fn send(
        &self,
        path: &str,
        body: Vec<u8>,
        forwarded: &Forwarded,
    ) -> Result<hyper::Response<hyper::body::Incoming>, UpstreamError> {
        let exchange = async {
            let tcp = tokio::net::TcpStream::connect(&self.authority)
                .await
                .map_err(|_| UpstreamError::Unreachable)?;
            let _ = tcp.set_nodelay(true);
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake::<_, Body>(TokioIo::new(tcp))
                    .await
                    .map_err(|_| UpstreamError::Unreachable)?;
            // The connection drives the exchange; it ends with the body.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            let mut request = Request::builder()
                .method(Method::POST)
                .uri(format!("{}{path}", self.base_path))
                .header(header::HOST, &self.authority)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/x-ndjson, text/event-stream")
                .body(Body::from(body))
                .map_err(|_| UpstreamError::Unreachable)?;
            forwarded.apply(request.headers_mut());
            sender
                .send_request(request)
                .await
                .map_err(|_| UpstreamError::Unreachable)
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| UpstreamError::TimedOut)?
    }

    async fn open_run(&self, request: RunRequest) -> Result<EventStream, UpstreamError> {
        let mut body = serde_json::json!({
            "run_id": request.run_id,
            "conversation_id": request.conversation_id,
            "agent_id": request.agent_id,
            "client_context": request.client_context,
        });
        match request.input {
            RunInput::Message(m) => body["message"] = m.into(),
            RunInput::Resume(r) => body["resume_data"] = r.into(),
        }
        let response = self
            .send("/runs", body.to_string().into_bytes(), &request.forwarded)
            .await?;
        let status = response.status();
        if !status.is_success() {
            return Err(UpstreamError::Status(status.as_u16()));
        }
        let encoded = response
            .headers()
            .get(header::CONTENT_ENCODING)
            .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
        if encoded {
            // lce sends no Accept-Encoding: a compressed body is refused.
            return Err(UpstreamError::ContentType);
        }
        let media = media_type(response.headers());
        read_body(
            Body::new(response.into_body()).into_data_stream(),
            &media,
            lce_types::DEFAULT_MAX_LINE_BYTES,
        )
        .ok_or(UpstreamError::ContentType)
    }

    async fn cancel_run(&self, run_id: &str, forwarded: &Forwarded) -> bool {
        let mut path = String::from("/runs/");
        // A run id is lce's hex or the AG-UI client's: percent-encode what a
        // path segment cannot hold.
        for b in run_id.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                path.push(char::from(b));
            } else {
                path.push_str(&format!("%{b:02X}"));
            }
        }
        path.push_str("/cancel");
        match self.send(&path, b"{}".to_vec(), forwarded).await {
            Ok(response) => response.status().is_success(),
            Err(e) => {
                tracing::warn!(target: "lce::upstream", run_id, error = %e, "cancel not accepted");
                false
            }
        }
    }
}

impl Upstream for HttpUpstream {
    fn open(&self, request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>> {
        Box::pin(self.open_run(request))
    }

    fn cancel<'a>(&'a self, run_id: &'a str, forwarded: &'a Forwarded) -> BoxFuture<'a, bool> {
        Box::pin(self.cancel_run(run_id, forwarded))
    }
}

/// The media type of a `Content-Type`, lowercase, without parameters.
fn media_type(headers: &axum::http::HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

// One bound for an upstream's lines and its SSE frames (`gateway.md`,
// "Harness lines"): `read_body` hands the line bound to both decoders.
const _: () =
    assert!(lce_types::DEFAULT_MAX_LINE_BYTES == lce_stream::codec::DEFAULT_MAX_FRAME_BYTES);

/// An answer's body read as the events of its media type (`None` for a
/// media type lce does not read): [`whole_lines`], then canonical JSON Lines
/// or SSE, each line or frame bounded by `max_line_bytes` (an upstream's is
/// [`lce_types::DEFAULT_MAX_LINE_BYTES`]; the fuzz harness passes smaller
/// ones, through `crate::fuzzing`).
pub(crate) fn read_body<S, E>(body: S, media: &str, max_line_bytes: usize) -> Option<EventStream>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    let reader = tokio_util::io::StreamReader::new(whole_lines(body, max_line_bytes));
    match media {
        "application/x-ndjson" | "application/jsonl" | "application/json-lines" => {
            // `lce_stream::codec::read_event_lines`, with the bound given.
            let decoder = lce_stream::codec::EventLinesDecoder::with_max_line_bytes(max_line_bytes);
            Some(Box::pin(
                tokio_util::codec::FramedRead::new(reader, decoder).map(|item| match item {
                    Ok(Ok(event)) => Ok(event),
                    Ok(Err(parse)) => Err(LceError::Parse(parse)),
                    Err(io) => Err(LceError::Io(io)),
                }),
            ))
        }
        "text/event-stream" => Some(Box::pin(sse_events(reader, max_line_bytes))),
        _ => None,
    }
}

/// The body's bytes up to its last newline while it arrives, the rest at
/// its clean end. A body that breaks (a reset, a cut chunked body) ends at
/// its last whole line, without an error: the run then ends as any adapter
/// that closes without a terminal (rule 12, D9), not as a bad line. Only
/// each new chunk is searched for a newline (linear in the bytes read), and
/// a line longer than the line bound (`max_line_bytes`, 4 MiB for an
/// upstream) is handed on as soon as it is over it, so at most the bound
/// (and one chunk) is held.
pub(crate) fn whole_lines<S, E>(
    body: S,
    max_line_bytes: usize,
) -> impl Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    futures::stream::unfold(
        (Box::pin(body), bytes::BytesMut::new(), false),
        move |(mut body, mut held, done)| async move {
            if done {
                return None;
            }
            loop {
                match body.next().await {
                    Some(Ok(chunk)) => {
                        let before = held.len();
                        held.extend_from_slice(&chunk);
                        if let Some(end) = memchr::memrchr(b'\n', &chunk) {
                            let mut at = before + end + 1;
                            if held.len() - at > max_line_bytes {
                                // A chunk longer than the bound can end in
                                // a line already over it: that goes too.
                                at = held.len();
                            }
                            let lines = held.split_to(at).freeze();
                            return Some((Ok(lines), (body, held, false)));
                        }
                        if held.len() > max_line_bytes {
                            // A line already over the bound: hand it on now
                            // (the decoder reports it, D8, and discards the
                            // rest of it), holding no more than the bound.
                            return Some((Ok(held.split().freeze()), (body, held, false)));
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!(target: "lce::upstream", held = held.len(), error = %e, "the upstream's body broke");
                        return None;
                    }
                    None if held.is_empty() => return None,
                    None => return Some((Ok(held.split().freeze()), (body, held, true))),
                }
            }
        },
    )
}

/// The canonical events in the `data:` of an SSE body (frames with only
/// comments are skipped; `event:` and `id:` are ignored; a frame the end
/// cuts before its blank line is discarded).
fn sse_events<R>(
    reader: R,
    max_frame_bytes: usize,
) -> impl Stream<Item = Result<Event, LceError>> + Send + 'static
where
    R: tokio::io::AsyncRead + Send + 'static,
{
    let decoder = lce_stream::SseDecoder::with_max_frame_bytes(max_frame_bytes);
    tokio_util::codec::FramedRead::new(reader, decoder).filter_map(|frame| async move {
        match frame {
            Ok(frame) if frame.comment_only || frame.data.is_empty() => None,
            Ok(frame) => Some(Event::from_json(&frame.data).map_err(LceError::Parse)),
            // The body's bytes never fail (`whole_lines`): this is the
            // decoder's end with a frame cut before its blank line,
            // which SSE discards.
            Err(lce_stream::SseDecodeError::Io(_)) => None,
            Err(_) => Some(Err(LceError::Io(std::io::Error::other(
                "the upstream's SSE is malformed",
            )))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_are_taken() {
        let ok = HttpUpstream::new("http://127.0.0.1:9000/base/", Duration::from_secs(1)).unwrap();
        assert_eq!(ok.authority, "127.0.0.1:9000");
        assert_eq!(ok.base_path, "/base");
        let default_port = HttpUpstream::new("http://harness", Duration::from_secs(1)).unwrap();
        assert_eq!(default_port.authority, "harness:80");
        assert_eq!(default_port.base_path, "");
        for bad in [
            "https://h:1",
            "http://u:p@h:1",
            "http://h:1/?q=1",
            "h:1",
            "not a url",
        ] {
            assert_eq!(
                HttpUpstream::new(bad, Duration::from_secs(1)).unwrap_err(),
                InvalidUpstreamUrl,
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn whole_lines_are_released_as_each_newline_arrives() {
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = ["a", "b\nc", "d", "\n", "tail"]
            .into_iter()
            .map(|s| Ok(bytes::Bytes::from(s)))
            .collect();
        let out: Vec<_> = whole_lines(futures::stream::iter(chunks), 1024)
            .map(|r| String::from_utf8(r.unwrap().to_vec()).unwrap())
            .collect()
            .await;
        assert_eq!(out, ["ab\n", "cd\n", "tail"]);
    }

    #[test]
    fn a_line_over_the_bound_is_handed_on_without_waiting_for_its_end() {
        let mib = bytes::Bytes::from(vec![b'x'; 1024 * 1024]);
        let chunks =
            futures::stream::iter((0..5).map(move |_| Ok::<_, std::io::Error>(mib.clone())))
                .chain(futures::stream::pending());
        let mut lines = Box::pin(whole_lines(chunks, lce_types::DEFAULT_MAX_LINE_BYTES));
        // Ready at once: the fifth MiB takes the held line over the bound.
        let first = futures::FutureExt::now_or_never(lines.next())
            .expect("handed on without waiting for a newline")
            .unwrap()
            .unwrap();
        assert_eq!(first.len(), 5 * 1024 * 1024);
    }

    /// Found by the `upstream_reader` fuzz target: the rest of a chunk
    /// after its last newline was held unchecked, so a chunk longer than
    /// the bound could leave more than the bound held, dropped silently at
    /// a break instead of reported as a line over the bound.
    #[tokio::test]
    async fn a_line_over_the_bound_after_a_newline_in_the_same_chunk_goes_on_at_once() {
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = vec![
            Ok(bytes::Bytes::from("ok\n0123456789")),
            Err(std::io::Error::other("reset")),
        ];
        let out: Vec<_> = whole_lines(futures::stream::iter(chunks), 4)
            .map(|r| r.unwrap())
            .collect()
            .await;
        assert_eq!(out, ["ok\n0123456789"]);
    }
}
