//! The OTLP export of the gateway's spans (I/O: a thread and a runtime of its own, sockets to
//! the collector). Nothing here runs on the data plane's threads, and nothing periodic either:
//! ending a span puts it on the bounded queue of [`super::queue`] (`OTEL_BSP_MAX_QUEUE_SIZE`,
//! default 2048; a span that finds it full is dropped and counted, never waited for), whose own
//! thread sends a batch every `OTEL_BSP_SCHEDULE_DELAY` (default 5 s) or when
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans are waiting, through the OTLP exporter, which runs on a
//! one-thread tokio runtime of its own (tonic and reqwest need one). A collector that is slow or
//! down only delays that thread.

use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry_otlp::{
    Protocol, WithExportConfig as _, WithHttpConfig as _, WithTonicConfig as _,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanExporter as _};

use super::queue::{Dropped, Queue, Sizes};
use crate::config::{OtlpProtocol, Telemetry as Settings};

/// Longest wait at shutdown for the spans still queued to leave.
pub const SHUTDOWN_FLUSH: Duration = Duration::from_secs(2);

/// Why tracing could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The exporter's runtime thread could not be started.
    #[error("telemetry: cannot start the exporter's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The span queue's thread could not be started.
    #[error("telemetry: cannot start the span queue's thread: {0}")]
    Queue(#[source] std::io::Error),
    /// The OTLP exporter refused its settings.
    #[error("telemetry: the OTLP exporter for {endpoint} cannot be built: {message}")]
    Exporter {
        /// `[telemetry] otlp_endpoint`, as resolved.
        endpoint: String,
        /// The exporter's message.
        message: String,
    },
}

/// The gateway's tracer and its exporter (one per running gateway; nothing process-wide).
pub struct Telemetry {
    pub(super) tracer: SdkTracer,
    provider: SdkTracerProvider,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Telemetry {
    /// Starts the exporter of `settings` (the collector is not contacted until the first batch),
    /// counting the spans that never reach it on `dropped`. Needs the process's rustls provider
    /// installed (the HTTP client is built here).
    pub fn start(settings: &Settings, dropped: Dropped) -> Result<Telemetry, TelemetryError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("a2a-egress-otlp")
            .enable_all()
            .build()
            .map_err(TelemetryError::Runtime)?;
        let mut exporter = {
            // tonic's channel starts its worker on the runtime it is built in.
            let _in = runtime.enter();
            exporter(settings).map_err(|message| TelemetryError::Exporter {
                endpoint: settings.endpoint.clone(),
                message,
            })?
        };
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        exporter.set_resource(&resource);
        // The queue's thread is outside any runtime: each batch is sent on the exporter's, where
        // tonic's and reqwest's I/O and timers run; the queue's thread waits, no data-plane one.
        let handle = runtime.handle().clone();
        let sizes = Sizes::from_env(|k| std::env::var(k).ok());
        let queue = Queue::start(sizes, dropped, move |batch| {
            handle.block_on(exporter.export(batch))
        })
        .map_err(TelemetryError::Queue)?;
        let provider = SdkTracerProvider::builder()
            .with_span_processor(queue)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                settings.sampling,
            ))))
            .with_resource(resource)
            .build();
        let scope = InstrumentationScope::builder("a2a-egress")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let tracer = opentelemetry::trace::TracerProvider::tracer_with_scope(&provider, scope);
        Ok(Telemetry {
            tracer,
            provider,
            runtime: Some(runtime),
        })
    }

    /// Sends what is queued (waiting at most [`SHUTDOWN_FLUSH`]) and stops exporting; spans
    /// ended later are dropped. Blocking: call it off the runtime's worker threads.
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown_with_timeout(SHUTDOWN_FLUSH) {
            tracing::warn!(error = %e, "telemetry: the last spans could not be exported");
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Never blocks, wherever the last reference goes (a runtime's worker included).
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The OTLP exporter `settings` describe. An `https://` collector is verified against the
/// roots an agent is (`state::trust`: the platform's, plus `ca_file`), over rustls on ring, on
/// both protocols.
fn exporter(settings: &Settings) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let roots =
        crate::state::trust::trust_roots(settings.ca_file.as_deref()).map_err(|e| e.to_string())?;
    let built = match settings.protocol {
        OtlpProtocol::Grpc => {
            let b = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(settings.endpoint.clone())
                .with_protocol(Protocol::Grpc)
                .with_timeout(settings.timeout);
            let b = if settings.endpoint.starts_with("https://") {
                let tls = opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new()
                    .trust_anchors(roots.store().roots);
                b.with_tls_config(tls)
            } else {
                b
            };
            b.build()
        }
        OtlpProtocol::Http => {
            let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots.store())
            .with_no_client_auth();
            // The gateway's own client settings: no proxy from the environment (the collector is
            // the operator's, and HTTPS_PROXY is for the agents), rustls on ring.
            let client = reqwest::Client::builder()
                .tls_backend_preconfigured(tls)
                .no_proxy()
                .timeout(settings.timeout)
                .build()
                .map_err(|e| e.to_string())?;
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(client)
                .with_endpoint(settings.endpoint.clone())
                .with_protocol(Protocol::HttpBinary)
                .with_timeout(settings.timeout)
                .build()
        }
    };
    built.map_err(|e| e.to_string())
}
