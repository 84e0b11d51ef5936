//! Trace context across workers.
//!
//! A run's steps execute on whichever worker takes the message, so its
//! spans can only form one tree if the context travels with the work: the
//! W3C `traceparent` of the span a run hangs under is kept in its record
//! and copied into each step message's envelope. A subagent's run hangs
//! under its parent's `task` call span.
//!
//! Spans are ordinary `tracing` spans; the binary decides whether they are
//! exported (tracing-opentelemetry + OTLP). Without an exporter every
//! helper here returns `None` and nothing is propagated.

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The only `traceparent` version this build writes (W3C Trace Context).
const VERSION: &str = "00";

/// The `traceparent` of `span`, if it is exported.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    format(span.context().span().span_context())
}

/// The trace id of `span` in hex, for log fields.
pub fn trace_id_of(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

/// Makes `span` a child of the remote span `traceparent` names. A missing
/// or malformed value leaves `span` where it is (a new trace): a bad
/// header must never fail a step.
pub fn set_parent(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(sc) = traceparent.and_then(parse) {
        // Fails only when no exporter is installed; then there is nothing
        // to join.
        let _ = span.set_parent(Context::new().with_remote_span_context(sc));
    }
}

/// Formats a valid span context as a `traceparent` header value.
pub fn format(sc: &SpanContext) -> Option<String> {
    sc.is_valid().then(|| {
        format!(
            "{VERSION}-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// Parses a `traceparent` header value; `None` unless it is well formed
/// with non-zero ids.
pub fn parse(value: &str) -> Option<SpanContext> {
    let mut parts = value.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    // Version 00 has exactly four fields; later versions may append more.
    if version.len() != 2 || version == "ff" || (version == VERSION && parts.next().is_some()) {
        return None;
    }
    if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let sc = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags),
        true,
        TraceState::default(),
    );
    sc.is_valid().then_some(sc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const HEADER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn round_trips_a_traceparent() {
        let sc = parse(HEADER).unwrap();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled());
        assert!(sc.is_remote());
        assert_eq!(format(&sc).as_deref(), Some(HEADER));
    }

    #[test]
    fn rejects_malformed_values() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn spans_without_an_exporter_propagate_nothing() {
        let span = tracing::info_span!("step");
        set_parent(&span, Some(HEADER));
        assert_eq!(traceparent_of(&span), None);
        assert_eq!(trace_id_of(&span), None);
    }
}
