//! Logs and traces of the process: JSON lines on stderr (filtered by
//! `RUST_LOG`), and, when an OTLP endpoint is configured, the harness's
//! spans exported over OTLP/HTTP.

use anyhow::Context;
use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// What must be flushed before the process exits.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Installs the JSON log layer and, with `otlp_endpoint` (the collector's
/// base URL, e.g. `http://127.0.0.1:4318`), the span exporter.
///
/// Only the harness's own spans are exported (run, step, model and tool
/// calls): the HTTP client under the exporter must not trace itself.
/// Log lines inside a step carry the step span's fields (run, thread,
/// step, trace id). Runtime contexts and API keys are never span or log
/// fields.
pub fn init(otlp_endpoint: Option<&str>) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let logs = tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let provider = otlp_endpoint.map(exporter).transpose()?;
    let spans = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("deepfleet"))
            .with_filter(Targets::new().with_target("deepfleet_worker", Level::INFO))
    });
    // A second initialisation (tests calling `run` twice) keeps the first.
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init();
    Ok(Telemetry { provider })
}

fn exporter(endpoint: &str) -> anyhow::Result<SdkTracerProvider> {
    let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(&url)
        .build()
        .with_context(|| format!("configuring the OTLP exporter for {url}"))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name("deepfleet").build())
        .build())
}

impl Telemetry {
    /// Flushes buffered spans. The exporter blocks (it runs on its own
    /// thread with a blocking HTTP client), so this runs off the runtime.
    pub async fn shutdown(self) {
        if let Some(provider) = self.provider {
            let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
            if let Ok(Err(e)) = flushed {
                tracing::warn!(error = %e, "flushing spans failed");
            }
        }
    }
}
