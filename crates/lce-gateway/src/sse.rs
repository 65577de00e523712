//! What every SSE answer of the gateway shares: its headers (DA's exact
//! ones for `custom` and `agui`, plus `X-Run-Id` and `X-Run-Token`) and the
//! keep-alive comments of `agui-v1` while a run is idle.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use futures::Stream;
use lce_core::WireFormat;

/// An SSE answer with `body`: the content type of `format` (and DA's
/// `Cache-Control`, `Connection`, `X-Accel-Buffering` for its formats),
/// `X-Run-Id` and `X-Run-Token`.
pub(crate) fn sse_response(body: Body, format: WireFormat, run_id: &str, token: &str) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    if format != WireFormat::AguiV1 {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    insert_run_headers(headers, run_id, token);
    response
}

/// `X-Run-Id` and `X-Run-Token` (a run id that is not a header value gets
/// neither; ids checked at the door always are).
pub(crate) fn insert_run_headers(headers: &mut HeaderMap, run_id: &str, token: &str) {
    if let Ok(v) = HeaderValue::from_str(run_id) {
        headers.insert("x-run-id", v);
        if let Ok(v) = HeaderValue::from_str(token) {
            headers.insert("x-run-token", v);
        }
    }
}

pin_project_lite::pin_project! {
    /// Sends `: keep-alive` comments while the inner stream is idle.
    pub(crate) struct KeepAlive<S> {
        #[pin]
        inner: S,
        every: Option<Duration>,
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
    }
}

impl<S> KeepAlive<S> {
    /// Keep-alive comments every `every` of idleness (`None`: none).
    pub(crate) fn new(inner: S, every: Option<Duration>) -> Self {
        KeepAlive {
            inner,
            every,
            timer: None,
        }
    }
}

impl<S, E> Stream for KeepAlive<S>
where
    S: Stream<Item = Result<bytes::Bytes, E>>,
{
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        match this.inner.poll_next(cx) {
            Poll::Ready(item) => {
                *this.timer = None;
                Poll::Ready(item)
            }
            Poll::Pending => {
                let Some(every) = *this.every else {
                    return Poll::Pending;
                };
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
                if timer.as_mut().poll(cx).is_ready() {
                    *this.timer = None;
                    let mut buf = bytes::BytesMut::new();
                    if lce_wire::write_comment(&mut buf, "keep-alive").is_ok() {
                        return Poll::Ready(Some(Ok(buf.freeze())));
                    }
                }
                Poll::Pending
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // Comments may come between the items, any number of them.
        (self.inner.size_hint().0, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[test]
    fn da_formats_get_das_headers_and_every_answer_names_its_run() {
        let token = "0a1b2c";
        for format in [WireFormat::Custom, WireFormat::Agui, WireFormat::AguiV1] {
            let r = sse_response(Body::empty(), format, "run-1", token);
            let h = r.headers();
            assert_eq!(h[header::CONTENT_TYPE], format.content_type());
            assert_eq!(
                h.contains_key(header::CACHE_CONTROL),
                format != WireFormat::AguiV1
            );
            assert_eq!(h["x-run-id"], "run-1");
            assert_eq!(h["x-run-token"], token);
        }
        let mut headers = HeaderMap::new();
        insert_run_headers(&mut headers, "bad\nid", token);
        assert!(headers.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_stream_gets_keep_alive_comments() {
        let inner = futures::stream::pending::<Result<bytes::Bytes, ()>>();
        let mut s = Box::pin(KeepAlive::new(inner, Some(Duration::from_secs(15))));
        let first = s.next().await.unwrap().unwrap();
        assert_eq!(&first[..], b": keep-alive\n\n");
        let none = Box::pin(KeepAlive::new(
            futures::stream::iter([Ok::<_, ()>(bytes::Bytes::new())]),
            None,
        ));
        assert_eq!(none.collect::<Vec<_>>().await.len(), 1);
    }
}
