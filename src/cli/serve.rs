//! `a2a-egress serve`: sets up logging and the runtime, binds `[listen]`, announces the bound
//! addresses and runs the gateway core ([`crate::server::run`]) until SIGTERM/SIGINT (I/O;
//! `anyhow` allowed here).
//!
//! Once both listeners are bound (and so already accept connections into the kernel's queue) it
//! prints one JSON line on stdout: `{"proxy": "127.0.0.1:P", "admin": "127.0.0.1:A",
//! "public_url": …}` (tests and scripts read it, as they read the reference agent's).

use std::future::Future;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;

use crate::config::{Config, DEFAULT_LOG_LEVEL, Log, LogFormat};
use crate::server::{Listeners, public_url};

/// The variable that sets the runtime's worker threads (tokio's own name for it).
const WORKER_THREADS_VAR: &str = "TOKIO_WORKER_THREADS";
/// Runtime worker threads when the variable is unset: four, even on a process pinned to one core.
/// Measured side by side (benches/RESULTS.md, a shared machine), four workers on one CPU gave
/// about a fifth more throughput and a far lower p99 than one worker, at the same CPU per
/// request: with one worker, every call in flight stalls whenever the core is taken away.
const WORKER_THREADS: usize = 4;
/// How long tasks still running after the core returned (connections past the close deadline)
/// get before the runtime stops.
const RUNTIME_STOP: Duration = Duration::from_secs(1);
/// How long queued log lines get to reach stderr at exit (it may be a pipe nobody reads).
const LOG_FLUSH: Duration = Duration::from_secs(1);

/// Where log lines go, and how (`[log]`, `--log-format`, `RUST_LOG`).
///
/// The level is `RUST_LOG` when set, else `[log] level`; pingora's own crates stay at warn unless
/// the directive names them. Colour codes only when stderr (where the lines go) is a terminal.
/// Lines are queued and written by a thread of their own ([`crate::proxy::log_sink`]).
fn init_tracing(log: &Log, format: Option<LogFormat>) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let directive = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| log.level.clone());
    let filter = tracing_subscriber::EnvFilter::builder()
        .parse(with_quiet_pingora(&directive))
        .unwrap_or_else(|e| {
            eprintln!(
                "RUST_LOG: {directive:?} is not a log filter ({e}); using {DEFAULT_LOG_LEVEL}"
            );
            tracing_subscriber::EnvFilter::new(with_quiet_pingora(DEFAULT_LOG_LEVEL))
        });
    // pingora's HTTP/1 client logs each request header it writes as raw bytes at TRACE, and
    // pingora_proxy the whole upstream request header and every body chunk at DEBUG, the
    // integration's `Authorization` and message bodies included (its Debug of header maps redacts
    // values marked sensitive; raw bytes cannot be). Those events are dropped whatever the filter
    // asks for, so no log level shows a credential or a body.
    let no_raw_headers =
        tracing_subscriber::filter::filter_fn(|m| !carries_raw_traffic(*m.level(), m.target()));
    let format = format.unwrap_or(log.format);
    let ansi = std::io::stderr().is_terminal();
    // Every line goes through the queue of `log_sink`, so no log line blocks a request.
    crate::proxy::log_sink::start();
    let layer = crate::proxy::access::fmt_layer(format, ansi, crate::proxy::log_sink::Writer);
    // The EnvFilter outermost, so its level is the layer's hint: `log` records (pingora's)
    // below it are dropped at the macro, not evaluated against every directive on each request.
    let layer = layer.with_filter(no_raw_headers).with_filter(filter);
    // try_init: a second call in one process (a test) keeps the first subscriber.
    let colour = ansi && format == LogFormat::Text;
    if tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .is_ok()
        && !colour
    {
        // Access lines are then written directly, in the form this layer would give them.
        crate::proxy::access::install(format);
    }
}

/// Whether an event of pingora's at `level` from `target` may carry raw request bytes: the
/// HTTP/1 client's header writes at TRACE, and pingora_proxy's upstream request header and body
/// chunks at DEBUG (and anything finer).
fn carries_raw_traffic(level: tracing::Level, target: &str) -> bool {
    (level == tracing::Level::TRACE && target.starts_with("pingora_core::protocols"))
        || (level >= tracing::Level::DEBUG && target.starts_with("pingora_proxy"))
}

/// `directive` with pingora's crates at warn unless it names them itself.
fn with_quiet_pingora(directive: &str) -> String {
    if directive.contains("pingora") {
        directive.to_owned()
    } else {
        format!("{directive},pingora_core=warn,pingora_proxy=warn")
    }
}

/// Resolves on the first SIGTERM or SIGINT. The handlers are installed before this returns, so a
/// signal sent once the addresses are announced is never missed.
fn termination() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: draining"),
            _ = int.recv() => tracing::info!("SIGINT: draining"),
        }
    })
}

/// Prints the one JSON line announcing the bound addresses.
fn announce(config: &Config, listeners: &Listeners) -> anyhow::Result<()> {
    let (proxy, admin) = listeners.local_addrs()?;
    let line = serde_json::json!({
        "proxy": proxy.to_string(),
        "admin": admin.to_string(),
        "public_url": public_url(&config.listen, proxy),
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// Runs the gateway until SIGTERM/SIGINT. Returns after a clean shutdown. `format` is
/// `--log-format`, which wins over `[log] format`.
pub fn run(config: Config, format: Option<LogFormat>) -> anyhow::Result<()> {
    init_tracing(&config.log, format);
    let workers = worker_threads()?;
    // The data plane, the control plane and the admin listener share these workers.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("a2a-egress")
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let served = runtime.block_on(async {
        let listeners = Listeners::bind(&config.listen)?;
        let stop = termination()?;
        announce(&config, &listeners)?;
        crate::server::run(config, listeners, stop).await?;
        anyhow::Ok(())
    });
    runtime.shutdown_timeout(RUNTIME_STOP);
    crate::proxy::log_sink::flush(LOG_FLUSH);
    served
}

/// The runtime's worker threads: `TOKIO_WORKER_THREADS` when set (a positive whole number, else
/// an error), otherwise [`WORKER_THREADS`].
fn worker_threads() -> anyhow::Result<usize> {
    match std::env::var(WORKER_THREADS_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(WORKER_THREADS),
        Ok(v) => match v.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => anyhow::bail!("{WORKER_THREADS_VAR} must be a positive whole number"),
        },
        Err(_) => anyhow::bail!("{WORKER_THREADS_VAR} must be a positive whole number"),
    }
}

/// Loads the config for `serve` (default file when not given).
pub fn load(path: Option<PathBuf>) -> anyhow::Result<Config> {
    let path = path.unwrap_or_else(|| PathBuf::from(super::DEFAULT_CONFIG));
    Config::load(&path).map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pingora_events_that_carry_raw_requests_are_dropped_at_any_filter() {
        use tracing::Level;
        // pingora_proxy logs the whole upstream request header and each body chunk at DEBUG.
        for (level, target) in [
            (Level::TRACE, "pingora_core::protocols::http::v1::client"),
            (Level::DEBUG, "pingora_proxy::proxy_h1"),
            (Level::TRACE, "pingora_proxy::proxy_h1"),
        ] {
            assert!(carries_raw_traffic(level, target), "{level} {target}");
        }
        assert!(!carries_raw_traffic(Level::WARN, "pingora_proxy::proxy_h1"));
        assert!(!carries_raw_traffic(Level::DEBUG, "a2a_egress::proxy"));
    }
}
