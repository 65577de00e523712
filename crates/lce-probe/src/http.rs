//! A plain HTTP/1.1 client: one connection per request, as lce's own
//! upstream client makes them.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Uri, header};
use hyper_util::rt::TokioIo;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::ProbeError;

/// The harness's address and path prefix.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    authority: String,
    base_path: String,
    /// `Authorization`'s value, when given.
    authorization: Option<hyper::header::HeaderValue>,
}

/// Why a request got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendError {
    /// No connection, or the connection broke before the answer's head.
    Unreachable,
    /// No answer's head before the deadline.
    TimedOut,
}

/// An answer's head and its body, read as it arrives.
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// The media type, lower case, without parameters.
    pub(crate) media_type: String,
    /// `Content-Encoding`, when present and not `identity`.
    pub(crate) encoding: Option<String>,
    body: Incoming,
    connection: AbortHandle,
}

/// One piece of a body.
pub(crate) enum Chunk {
    /// Bytes.
    Data(Bytes),
    /// The body ended.
    End,
    /// The connection broke mid-body.
    Broken,
    /// The deadline passed.
    TimedOut,
}

impl Target {
    /// `http://HOST:PORT[/PATH]`, with `Authorization: Bearer bearer` on
    /// every request when given.
    pub(crate) fn parse(url: &str, bearer: Option<&str>) -> Result<Target, ProbeError> {
        let uri: Uri = url.parse().map_err(|_| ProbeError::BadUrl)?;
        if uri.scheme_str() != Some("http") || uri.query().is_some() {
            return Err(ProbeError::BadUrl);
        }
        let authority = uri.authority().ok_or(ProbeError::BadUrl)?;
        if authority.as_str().contains('@') || authority.host().is_empty() {
            return Err(ProbeError::BadUrl);
        }
        let port = authority.port_u16().unwrap_or(80);
        let authorization = match bearer {
            Some(token) => {
                let mut value = hyper::header::HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| ProbeError::BadBearer)?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(Target {
            authority: format!("{}:{port}", authority.host()),
            base_path: uri.path().trim_end_matches('/').to_owned(),
            authorization,
        })
    }

    /// `POST {base}{path}` with a JSON body; the answer's head by `deadline`.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: String,
        deadline: Instant,
    ) -> Result<Answer, SendError> {
        let exchange = async {
            let tcp = tokio::net::TcpStream::connect(&self.authority)
                .await
                .map_err(|_| SendError::Unreachable)?;
            let _ = tcp.set_nodelay(true);
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(tcp))
                    .await
                    .map_err(|_| SendError::Unreachable)?;
            let connection = tokio::spawn(async move {
                let _ = connection.await;
            })
            .abort_handle();
            let mut request = Request::builder()
                .method(Method::POST)
                .uri(format!("{}{path}", self.base_path))
                .header(header::HOST, &self.authority)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/x-ndjson, text/event-stream")
                .body(Full::new(Bytes::from(body)))
                .map_err(|_| SendError::Unreachable)?;
            if let Some(value) = &self.authorization {
                request
                    .headers_mut()
                    .insert(header::AUTHORIZATION, value.clone());
            }
            let response = sender.send_request(request).await;
            match response {
                Ok(r) => Ok(Answer::new(r, connection)),
                Err(_) => {
                    connection.abort();
                    Err(SendError::Unreachable)
                }
            }
        };
        tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| SendError::TimedOut)?
    }
}

impl Answer {
    fn new(response: hyper::Response<Incoming>, connection: AbortHandle) -> Answer {
        let headers = response.headers();
        let text = |name: header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_ascii_lowercase())
        };
        let media_type = text(header::CONTENT_TYPE)
            .map(|v| v.split(';').next().unwrap_or("").trim().to_owned())
            .unwrap_or_default();
        let encoding = text(header::CONTENT_ENCODING).filter(|e| e != "identity");
        Answer {
            status: response.status().as_u16(),
            media_type,
            encoding,
            body: response.into_body(),
            connection,
        }
    }

    /// `true` for a 2xx status.
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The media type fit for a message: printable ASCII, at most 64 bytes.
    pub(crate) fn shown_media_type(&self) -> String {
        if self.media_type.is_empty() {
            return "no Content-Type".to_owned();
        }
        let shown: String = self
            .media_type
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .take(64)
            .collect();
        format!("Content-Type {shown}")
    }

    /// The next piece of the body, by `deadline`.
    pub(crate) async fn chunk(&mut self, deadline: Instant) -> Chunk {
        loop {
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Chunk::TimedOut,
                Ok(None) => return Chunk::End,
                Ok(Some(Err(_))) => return Chunk::Broken,
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Chunk::Data(data);
                    }
                }
            }
        }
    }

    /// The whole body, at most `max` bytes of it, by `deadline`; `None` when
    /// it did not end in time.
    pub(crate) async fn read_small(&mut self, max: usize, deadline: Instant) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            match self.chunk(deadline).await {
                Chunk::Data(d) => {
                    let room = max.saturating_sub(out.len());
                    out.extend_from_slice(d.get(..room.min(d.len())).unwrap_or(&[]));
                }
                Chunk::End | Chunk::Broken => return Some(out),
                Chunk::TimedOut => return None,
            }
        }
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        // Closes the connection: a client that goes away.
        self.connection.abort();
    }
}
