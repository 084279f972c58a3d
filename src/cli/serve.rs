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

use crate::config::{Config, DEFAULT_LOG_LEVEL, Log, LogFormat, Threads, ThreadsFrom};
use crate::server::{Listeners, public_url};

/// The variable that sets the data plane's threads (tokio's own name for it); it wins over
/// `[runtime] worker_threads`.
const WORKER_THREADS_VAR: &str = "TOKIO_WORKER_THREADS";
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
    // Both were checked by `load` ([`crate::config::check_directive`]).
    let directive = rust_log().unwrap_or_else(|| log.level.clone());
    let filter = tracing_subscriber::EnvFilter::builder()
        .parse(with_quiet_pingora(&directive))
        .unwrap_or_else(|e| {
            eprintln!(
                "RUST_LOG: {directive:?} is not a log filter ({e}); using {DEFAULT_LOG_LEVEL}"
            );
            tracing_subscriber::EnvFilter::new(with_quiet_pingora(DEFAULT_LOG_LEVEL))
        });
    // pingora's HTTP/1 code logs raw bytes at DEBUG and TRACE (an invalid chunked body, the
    // caller's request body included; an agent's whole answer header; each request header it
    // writes), and pingora_proxy the whole upstream request header and every body chunk at DEBUG,
    // the integration's `Authorization` and message bodies included (its Debug of header maps
    // redacts values marked sensitive; raw bytes cannot be). Every event of those modules at
    // those levels is dropped whatever the filter asks for (`RUST_LOG=trace`,
    // `pingora_core=debug`), so no log level shows a credential, a header or a body.
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

/// Whether an event of pingora's at `level` from `target` may carry raw traffic: anything at
/// DEBUG or finer under `pingora_core::protocols` and `pingora_proxy`, anything at TRACE elsewhere
/// in `pingora_core`; where pingora writes raw bytes is `seam::RAW_TRAFFIC_TARGETS`.
fn carries_raw_traffic(level: tracing::Level, target: &str) -> bool {
    crate::seam::RAW_TRAFFIC_TARGETS
        .iter()
        .any(|(prefix, finest_safe)| level >= *finest_safe && target.starts_with(prefix))
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

/// Prints the one JSON line announcing the bound addresses and the data plane's threads.
fn announce(config: &Config, listeners: &Listeners, threads: &Threads) -> anyhow::Result<()> {
    let (proxy, admin) = listeners.local_addrs()?;
    let line = serde_json::json!({
        "proxy": proxy.to_string(),
        "admin": admin.to_string(),
        "public_url": public_url(&config.listen, proxy),
        "worker_threads": threads.worker_threads,
        "worker_threads_from": threads.from.as_str(),
        "worker_threads_why": threads.why,
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
    let threads = worker_threads(&config.runtime)?;
    tracing::info!(
        worker_threads = threads.worker_threads,
        from = threads.from.as_str(),
        why = %threads.why,
        control_plane_apart = threads.control_plane_apart(),
        "data-plane threads chosen (read once: a changed CPU quota needs a restart)"
    );
    let runtimes = Runtimes::build(&threads)?;
    let on = crate::server::RunOn {
        data_plane: runtimes.data_plane(),
        threads: Some(threads.clone()),
    };
    let served = runtimes.main.block_on(async {
        let listeners = Listeners::bind(&config.listen)?;
        let stop = termination()?;
        announce(&config, &listeners, &threads)?;
        crate::server::run_on(config, listeners, stop, on).await?;
        anyhow::Ok(())
    });
    runtimes.shutdown();
    crate::proxy::log_sink::flush(LOG_FLUSH);
    served
}

/// The runtimes `serve` runs on (`[runtime]`).
struct Runtimes {
    /// With work stealing, or on one data-plane thread: the one multi-thread runtime everything
    /// shares (on one worker there is nothing to steal, and a multi-thread runtime lets a
    /// blocking file read hand the worker's other tasks over: `types::file::blocking`).
    /// Without, on more: the control plane's and the admin listener's single-threaded runtime
    /// (on the main thread).
    main: tokio::runtime::Runtime,
    /// Without work stealing, on more than one thread: the data plane's threads, one
    /// single-threaded runtime each.
    data_plane: Option<crate::seam::NoStealRuntime>,
}

impl Runtimes {
    fn build(threads: &Threads) -> anyhow::Result<Runtimes> {
        let workers = threads.worker_threads;
        let main = if !threads.control_plane_apart() {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name("a2a-egress")
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .context("starting the runtime")?;
        let data_plane = threads.control_plane_apart().then(|| {
            crate::seam::NoStealRuntime::new(
                workers,
                "a2a-egress-data",
                Default::default(),
                Default::default(),
            )
        });
        Ok(Runtimes { main, data_plane })
    }

    /// The thread the data plane's accept loop starts on (`None`: the shared runtime).
    fn data_plane(&self) -> Option<tokio::runtime::Handle> {
        self.data_plane.as_ref().map(|r| r.get_runtime().clone())
    }

    fn shutdown(self) {
        self.main.shutdown_timeout(RUNTIME_STOP);
        if let Some(r) = self.data_plane {
            r.shutdown_timeout(RUNTIME_STOP);
        }
    }
}

/// The data plane's threads: `TOKIO_WORKER_THREADS` when set (a positive whole number, else an
/// error), otherwise `[runtime] worker_threads`, otherwise the CPUs the process may use
/// ([`crate::types::cpus`]: affinity and cgroup CPU quota, rounded down, at least 1).
fn worker_threads(runtime: &crate::config::Runtime) -> anyhow::Result<Threads> {
    let max = crate::config::MAX_WORKER_THREADS;
    let (worker_threads, from, why) = match env_worker_threads().map_err(anyhow::Error::msg)? {
        Some(n) => (n, ThreadsFrom::Env, format!("{WORKER_THREADS_VAR}={n}")),
        None => match runtime.worker_threads {
            Some(n) => (
                n,
                ThreadsFrom::Config,
                format!("[runtime] worker_threads = {n}"),
            ),
            None => {
                let cpus = crate::types::cpus::CpuLimits::read();
                (cpus.threads().min(max), ThreadsFrom::Cpus, cpus.why())
            }
        },
    };
    Ok(Threads {
        worker_threads,
        from,
        why,
        work_stealing: runtime.work_stealing,
    })
}

/// Why `serve` does not start: exit [`super::EXIT_USAGE`] (or [`super::EXIT_NOINPUT`] for a
/// config file that cannot be read).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The config file is missing, invalid or refused.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// `RUST_LOG` is set to something the `[log] level` rule refuses: a bad directive would
    /// start a gateway that logs nothing, so it is refused as a bad `[log] level` is.
    #[error("RUST_LOG: {directive:?}: {error}")]
    RustLog {
        /// The variable's value.
        directive: String,
        /// Why it is refused.
        error: crate::config::DirectiveError,
    },
    /// `TOKIO_WORKER_THREADS` is set to something other than a thread count: bad configuration
    /// (64, which systemd does not restart), not a failure to start (1, restarted in a loop).
    #[error("{0}")]
    WorkerThreads(String),
}

impl StartError {
    /// The exit code `serve` ends with.
    pub fn exit_code(&self) -> u8 {
        match self {
            StartError::Config(e) => super::config_exit_code(e),
            StartError::RustLog { .. } | StartError::WorkerThreads(_) => super::EXIT_USAGE,
        }
    }
}

/// Loads the config for `serve` (default file when not given) and checks `RUST_LOG` and
/// `TOKIO_WORKER_THREADS`.
pub fn load(path: Option<PathBuf>) -> Result<Config, StartError> {
    let path = path.unwrap_or_else(|| PathBuf::from(super::DEFAULT_CONFIG));
    let config = Config::load(&path)?;
    env_worker_threads().map_err(StartError::WorkerThreads)?;
    if let Some(directive) = rust_log() {
        crate::config::check_directive(&directive)
            .map_err(|error| StartError::RustLog { directive, error })?;
    }
    Ok(config)
}

/// `TOKIO_WORKER_THREADS`: `None` when unset, else a whole number from 1 to
/// [`crate::config::MAX_WORKER_THREADS`]; `Err` says what is wrong with it.
fn env_worker_threads() -> Result<Option<usize>, String> {
    let max = crate::config::MAX_WORKER_THREADS;
    match std::env::var(WORKER_THREADS_VAR) {
        Ok(v) => match v.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
            _ => Err(format!(
                "{WORKER_THREADS_VAR}: {v:?}: must be a whole number from 1 to {max}"
            )),
        },
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("{WORKER_THREADS_VAR} is not valid unicode"))
        }
        Err(std::env::VarError::NotPresent) => Ok(None),
    }
}

/// `RUST_LOG`, when set to something other than blanks.
fn rust_log() -> Option<String> {
    std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On one data-plane thread, with or without work stealing, a blocking file read on the
    /// control plane lets the runtime's other tasks run: the read waits for a message that only
    /// a task spawned while it blocks can send. On a single-threaded runtime that task would
    /// never run and the read would time out.
    #[test]
    fn on_one_thread_a_blocking_read_does_not_hold_up_the_other_tasks() {
        for work_stealing in [true, false] {
            let threads = Threads {
                worker_threads: 1,
                from: ThreadsFrom::Config,
                why: String::new(),
                work_stealing,
            };
            assert!(!threads.control_plane_apart());
            let runtimes = Runtimes::build(&threads).unwrap();
            assert!(runtimes.data_plane().is_none());
            let got = runtimes.main.block_on(async {
                tokio::spawn(async {
                    let (tx, rx) = std::sync::mpsc::channel();
                    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
                    let sender = tokio::spawn(async move {
                        let _ = started.await;
                        let _ = tx.send(());
                    });
                    let _ = started_tx.send(());
                    let got =
                        crate::types::file::blocking(|| rx.recv_timeout(Duration::from_secs(20)));
                    let _ = sender.await;
                    got
                })
                .await
                .unwrap()
            });
            assert!(got.is_ok(), "work_stealing = {work_stealing}: {got:?}");
            runtimes.shutdown();
        }
    }

    #[test]
    fn pingora_events_that_carry_raw_requests_are_dropped_at_any_filter() {
        use tracing::Level;
        // Where pingora-core 0.9.1 and pingora_proxy write raw bytes (seam::RAW_TRAFFIC_TARGETS).
        for (level, target) in [
            // An invalid chunked body's bytes (the caller's request body too).
            (Level::DEBUG, "pingora_core::protocols::http::v1::body"),
            // An agent's whole answer header.
            (Level::DEBUG, "pingora_core::protocols::http::v1::client"),
            (Level::TRACE, "pingora_core::protocols::http::v1::client"),
            // A request header, each answer task.
            (Level::TRACE, "pingora_core::apps::http_app"),
            (Level::DEBUG, "pingora_proxy::proxy_h1"),
            (Level::TRACE, "pingora_proxy::proxy_h1"),
        ] {
            assert!(carries_raw_traffic(level, target), "{level} {target}");
        }
        for (level, target) in [
            (Level::INFO, "pingora_core::protocols::http::v1::body"),
            (Level::WARN, "pingora_proxy::proxy_h1"),
            (Level::DEBUG, "pingora_core::connectors"),
            (Level::DEBUG, "a2a_egress::proxy"),
            (Level::TRACE, "a2a_egress::proxy"),
        ] {
            assert!(!carries_raw_traffic(level, target), "{level} {target}");
        }
    }
}
