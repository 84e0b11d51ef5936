//! Logs and traces of the process: lines on stderr (filtered by
//! `RUST_LOG`; human-readable on a terminal, JSON otherwise, or as
//! `log_format` says), and, when an OTLP endpoint is configured, the harness's
//! spans exported over OTLP/HTTP.
//!
//! The endpoint comes from `--otlp-endpoint`, then `otlp_endpoint`
//! (`DEEPFLEET__OTLP_ENDPOINT`), then the standard variables
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`);
//! `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SDK_DISABLED` are honoured too.

use std::io::IsTerminal;

use anyhow::Context;
use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::settings::LogFormat;

/// What must be flushed before the process exits.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Where and how spans are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The full URL spans are posted to (`.../v1/traces`).
    pub traces_url: String,
    /// `http/protobuf` or `http/json`.
    pub protocol: Protocol,
    /// The `service.name` resource attribute.
    pub service_name: String,
}

impl OtlpConfig {
    /// The export configuration from `explicit` (the flag or the setting:
    /// a collector base URL) and the standard `OTEL_*` variables read
    /// through `env`; `None` when nothing asks for an export.
    pub fn resolve(
        explicit: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Option<Self>> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let traces = |base: &str| format!("{}/v1/traces", base.trim_end_matches('/'));
        let traces_url = match explicit.filter(|e| !e.trim().is_empty()) {
            Some(base) => traces(base),
            None => match var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                Some(url) => url,
                None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
                    Some(base) => traces(&base),
                    None => return Ok(None),
                },
            },
        };
        let protocol = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .as_deref()
        {
            None | Some("http/protobuf") => Protocol::HttpBinary,
            Some("http/json") => Protocol::HttpJson,
            Some(other) => anyhow::bail!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported: use http/protobuf \
                 or http/json (OTLP over HTTP, port 4318)"
            ),
        };
        let service_name = var("OTEL_SERVICE_NAME").unwrap_or_else(|| "deepfleet".to_owned());
        Ok(Some(OtlpConfig {
            traces_url,
            protocol,
            service_name,
        }))
    }
}

/// Installs the log layer (text or JSON, per `format`, filtered by
/// `log_filter`, a `RUST_LOG` directive, `warn` without one) and, with
/// `otlp`, the span exporter.
///
/// Only the harness's own spans are exported (run, step, model and tool
/// calls): the HTTP client under the exporter must not trace itself.
/// Log lines inside a step carry the step span's fields (run, thread,
/// step, trace id). Runtime contexts and API keys are never span or log
/// fields.
pub fn init(
    otlp: Option<&OtlpConfig>,
    format: LogFormat,
    log_filter: Option<&str>,
) -> anyhow::Result<Telemetry> {
    let filter = log_filter
        .and_then(|directives| EnvFilter::try_new(directives).ok())
        .unwrap_or_else(|| EnvFilter::new("warn"));
    let terminal = std::io::stderr().is_terminal();
    let logs = if format.is_json(terminal) {
        tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_ansi(terminal)
            .with_writer(std::io::stderr)
            .boxed()
    }
    .with_filter(filter);
    let provider = otlp.map(exporter).transpose()?;
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

fn exporter(otlp: &OtlpConfig) -> anyhow::Result<SdkTracerProvider> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(&otlp.traces_url)
        .with_protocol(otlp.protocol)
        .build()
        .with_context(|| format!("configuring the OTLP exporter for {}", otlp.traces_url))?;
    // The default builder also reads OTEL_RESOURCE_ATTRIBUTES.
    let resource = Resource::builder()
        .with_service_name(otlp.service_name.clone())
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use pretty_assertions::assert_eq;

    use super::*;

    fn resolve(
        explicit: Option<&str>,
        vars: &[(&str, &str)],
    ) -> anyhow::Result<Option<OtlpConfig>> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        OtlpConfig::resolve(explicit, |name| vars.get(name).cloned())
    }

    fn config(url: &str, protocol: Protocol, service: &str) -> Option<OtlpConfig> {
        Some(OtlpConfig {
            traces_url: url.to_owned(),
            protocol,
            service_name: service.to_owned(),
        })
    }

    #[test]
    fn nothing_configured_exports_nothing() {
        assert_eq!(resolve(None, &[]).unwrap(), None);
        assert_eq!(
            resolve(Some(""), &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")]).unwrap(),
            None
        );
    }

    #[test]
    fn the_standard_variables_are_honoured() {
        let got = resolve(
            None,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_SERVICE_NAME", "fleet-worker"),
            ],
        )
        .unwrap();
        assert_eq!(
            got,
            config(
                "http://collector:4318/v1/traces",
                Protocol::HttpJson,
                "fleet-worker"
            )
        );
    }

    #[test]
    fn the_traces_endpoint_is_used_as_is_and_wins_over_the_base() {
        let got = resolve(
            None,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://traces:4318/custom",
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ],
        )
        .unwrap();
        assert_eq!(
            got,
            config(
                "http://traces:4318/custom",
                Protocol::HttpBinary,
                "deepfleet"
            )
        );
    }

    #[test]
    fn the_flag_or_setting_wins_over_the_variables() {
        let got = resolve(
            Some("http://127.0.0.1:4318"),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://elsewhere:4318")],
        )
        .unwrap();
        assert_eq!(
            got,
            config(
                "http://127.0.0.1:4318/v1/traces",
                Protocol::HttpBinary,
                "deepfleet"
            )
        );
    }

    #[test]
    fn grpc_and_unknown_protocols_are_refused_and_the_sdk_can_be_disabled() {
        let grpc = resolve(
            None,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
        );
        assert!(grpc.unwrap_err().to_string().contains("http/protobuf"));
        let disabled = resolve(
            Some("http://collector:4318"),
            &[("OTEL_SDK_DISABLED", "true")],
        );
        assert_eq!(disabled.unwrap(), None);
    }
}
