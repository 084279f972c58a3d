//! The gateway core: [`run`] serves the data plane, the admin listener and the control plane on
//! listeners the caller has already bound, until a shutdown future completes, then drains (I/O:
//! sockets, the config file, the state directory).
//!
//! `a2a-egress serve` binds `[listen]` ([`Listeners::bind`]), announces the addresses and calls
//! [`run`] with SIGTERM/SIGINT as the shutdown future; the integration tests call it in-process
//! on port-0 listeners with a future of their own. Nothing here uses fixed paths or process-wide
//! registries (metrics live in this run's [`Metrics`]), so several gateways can run in one
//! process. The one process-wide input is SIGHUP, which every gateway of a process takes as
//! "reload the config now".
//!
//! The data plane is pingora's listening service, handed the bound socket the way pingora's
//! graceful upgrade hands a listening socket to a new process (a file descriptor registered
//! under the address it serves), so pingora's own accept loop and socket settings apply and no
//! port is ever released and bound again.
//!
//! Shutdown, once the future completes: new calls are refused (`GATEWAY_DRAINING`, and `/readyz`
//! answers 503) while calls in flight finish, for at most [`DRAIN_DEADLINE`]; then the data plane
//! stops accepting, kept-alive connections close at their next request boundary, and connections
//! still open after [`CLOSE_DEADLINE`] are left to the runtime's end; then the control plane and
//! the admin listener stop and [`run`] returns.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub mod probes;

use crate::config::{Config, Listen};
use crate::control::fetch::CardFetcher;
use crate::control::refresh::ControlHandle;
use crate::metrics::Metrics;
use crate::proxy::Gateway;
use crate::seam::{ServerApp, ShutdownWatch, Stream};
use crate::state::{Snapshot, StaleReceiver, Store, stale_channel};

/// Longest wait for in-flight calls once shutdown starts.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(30);
/// Longest wait, after the drain, for open data-plane connections to close.
pub const CLOSE_DEADLINE: Duration = Duration::from_secs(1);
/// How often the drain looks at the in-flight gauge.
const DRAIN_POLL: Duration = Duration::from_millis(20);
/// Stale marks queued between the data plane and the control plane.
const STALE_QUEUE: usize = 1024;
/// Read buffer of each data-plane connection (pingora's default is 64 KiB, zero-filled, so
/// resident from the first request on). A request header and a 10 KB body still arrive in one
/// read; a larger body is read past the buffer straight into pingora's 64 KiB body buffer.
const DOWNSTREAM_READ_BUFFER: usize = 16 * 1024;

/// Which listener an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// `[listen] proxy`, the data plane.
    Proxy,
    /// `[listen] admin`.
    Admin,
}

impl std::fmt::Display for Which {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Which::Proxy => "proxy",
            Which::Admin => "admin",
        })
    }
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A `[listen]` address could not be bound.
    #[error("binding the {which} listener on {addr}: {source}")]
    Bind {
        /// The listener.
        which: Which,
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// A bound listener could not be prepared for serving (its address read, non-blocking mode
    /// set, or its registration with the runtime).
    #[error("preparing the {which} listener: {source}")]
    Listener {
        /// The listener.
        which: Which,
        /// The OS error.
        source: std::io::Error,
    },
    /// `[telemetry]`'s exporter could not start.
    #[error(transparent)]
    Telemetry(#[from] crate::telemetry::TelemetryError),
}

impl ServerError {
    /// Bounded label for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerError::Bind { .. } => "bind",
            ServerError::Listener { .. } => "listener",
            ServerError::Telemetry(_) => "telemetry",
        }
    }
}

/// The two bound listening sockets [`run`] serves.
#[derive(Debug)]
pub struct Listeners {
    /// The data plane.
    pub proxy: TcpListener,
    /// The admin listener.
    pub admin: TcpListener,
}

impl Listeners {
    /// Binds `[listen] proxy` and `[listen] admin` (port 0 picks a free port). The sockets listen
    /// from here on: connections made before [`run`] starts wait in the kernel's queue.
    pub fn bind(listen: &Listen) -> Result<Listeners, ServerError> {
        let bind = |which, addr| {
            TcpListener::bind(addr).map_err(|source| ServerError::Bind {
                which,
                addr,
                source,
            })
        };
        Ok(Listeners {
            proxy: bind(Which::Proxy, listen.proxy)?,
            admin: bind(Which::Admin, listen.admin)?,
        })
    }

    /// The bound addresses: data plane, admin.
    pub fn local_addrs(&self) -> Result<(SocketAddr, SocketAddr), ServerError> {
        let addr = |which, l: &TcpListener| {
            l.local_addr()
                .map_err(|source| ServerError::Listener { which, source })
        };
        Ok((
            addr(Which::Proxy, &self.proxy)?,
            addr(Which::Admin, &self.admin)?,
        ))
    }
}

/// The base URL written into effective cards: `[listen] public_url`, else the bound data plane.
pub fn public_url(listen: &Listen, proxy: SocketAddr) -> String {
    listen
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{proxy}"))
}

/// Runs the gateway on `listeners` until `shutdown` completes, then drains (see the module doc)
/// and returns. Must run inside a tokio runtime with I/O and time enabled; every task it starts
/// runs there. Dropping the future instead stops accepting and stops the control
/// plane and the admin listener, without the drain.
pub async fn run(
    config: Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    run_on(config, listeners, shutdown, RunOn::default()).await
}

/// Where [`run_on`] runs the data plane, and the threads `serve` chose for it (`/readyz` shows
/// them). The default: the caller's runtime, no thread count to show (the in-process tests').
#[derive(Debug, Default)]
pub struct RunOn {
    /// The runtime the data plane's accept loop starts on (`None`: the caller's). `a2a-egress
    /// serve` without work stealing, on more than one thread, hands it one thread of pingora's
    /// no-steal runtime, whose accept loop then gives each connection to one of that runtime's
    /// threads for its whole life; the control plane and the admin listener stay on the caller's
    /// runtime. The caller keeps it running until [`run_on`] returns.
    pub data_plane: Option<tokio::runtime::Handle>,
    /// The data plane's threads and why (`None`: not chosen by `serve`).
    pub threads: Option<crate::config::Threads>,
}

/// [`run`], on the runtimes `on` names.
pub async fn run_on(
    config: Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()>,
    on: RunOn,
) -> Result<(), ServerError> {
    let RunOn {
        data_plane,
        threads,
    } = on;
    crate::control::fetch::install_crypto_provider();
    let (proxy_addr, _) = listeners.local_addrs()?;
    let public_url = public_url(&config.listen, proxy_addr);
    let config = Arc::new(config);
    let metrics = Metrics::new();
    let store = Arc::new(Store::new(Snapshot::pending(&config.integrations)));
    metrics.observe_snapshot(&store.load());
    let (stale_tx, stale_rx) = stale_channel(STALE_QUEUE);
    let draining = Arc::new(AtomicBool::new(false));

    let signer = card_signer(&config, &public_url, &metrics);
    let telemetry = start_telemetry(&config, &metrics)?;
    let mut running = Running::default();
    let control = running.start_control(&config, &store, &metrics, stale_rx)?;
    running.start_probes(&config, &store, &metrics, &control);
    running.start_admin(
        &config,
        listeners.admin,
        crate::admin::AdminState {
            store: store.clone(),
            metrics: metrics.clone(),
            draining: draining.clone(),
            control: Some(control.clone()),
            access: crate::admin::Access::new(&config.admin, metrics.clone()),
            default_data_class: config.policy.default_data_class.clone(),
            signer: signer.clone(),
            threads,
        },
    )?;
    let gateway = Gateway {
        store,
        metrics: metrics.clone(),
        stale: stale_tx,
        public_url,
        default_data_class: config.policy.default_data_class.clone(),
        draining: draining.clone(),
        control: Some(Arc::new(control)),
        limits: crate::proxy::limits::RequestLimits::new(&config.limits),
        client: crate::proxy::client::Client::new(),
        signer,
        access_log: config.log.access == crate::config::AccessLog::On,
        telemetry: telemetry.clone(),
    };
    let data_plane = DataPlane::start(gateway, &config, listeners.proxy, &metrics, data_plane)?;
    let keep_warm = config
        .runtime
        .keep_warm
        .and_then(|every| crate::proxy::keep_warm::start(every, metrics.inflight.clone()));
    let warm = match (&keep_warm, config.runtime.keep_warm) {
        (Some(_), Some(every)) => format!("every {}us while busy", every.as_micros()),
        _ => "off".to_owned(),
    };
    tracing::info!(proxy = %proxy_addr, keep_warm = %warm, "serving");

    shutdown.await;
    drain(&draining, &metrics.inflight, DRAIN_DEADLINE).await;
    data_plane.stop(CLOSE_DEADLINE).await;
    drop(keep_warm);
    drop(running);
    if let Some(t) = telemetry {
        // The last spans leave within the exporter's flush bound, off this runtime's workers.
        let _ = tokio::task::spawn_blocking(move || t.shutdown()).await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// The exporter of `[telemetry]`, when tracing is on, counting dropped spans on `metrics`.
fn start_telemetry(
    config: &Config,
    metrics: &Metrics,
) -> Result<Option<Arc<crate::telemetry::Telemetry>>, ServerError> {
    let Some(settings) = &config.telemetry else {
        return Ok(None);
    };
    let dropped = crate::telemetry::Dropped {
        queue_full: (metrics.spans_dropped).with_label_values(&["queue_full"]),
        export_failed: (metrics.spans_dropped).with_label_values(&["export_failed"]),
    };
    let t = crate::telemetry::Telemetry::start(settings, dropped)?;
    tracing::info!(
        endpoint = %settings.endpoint,
        protocol = settings.protocol.as_str(),
        sampling = settings.sampling,
        "telemetry: exporting traces by OTLP"
    );
    Ok(Some(Arc::new(t)))
}

/// The effective-card signer of `[effective_card]`, counting on `metrics`; warns once, at start,
/// about a `jku` orchestrators should not fetch keys from as is.
fn card_signer(
    config: &Config,
    public_url: &str,
    metrics: &Metrics,
) -> Option<Arc<crate::proxy::card_signer::CardSigner>> {
    let c = config.card_signing.as_ref()?;
    let signer = crate::proxy::card_signer::CardSigner::new(c, public_url)
        .counting(metrics.card_signatures.clone());
    let risks = crate::proxy::card_signer::jku_risks(
        signer.jku(),
        c.jku.is_some(),
        config.listen.public_url.is_some(),
    );
    for risk in risks {
        tracing::warn!(jku = %signer.jku(), reason = risk.reason(), "{}", risk.advice());
    }
    Some(Arc::new(signer))
}

/// Refuses new calls, then waits until no call is in flight or `deadline` has passed.
async fn drain(draining: &AtomicBool, inflight: &prometheus::IntGauge, deadline: Duration) {
    draining.store(true, Ordering::SeqCst);
    let start = tokio::time::Instant::now();
    while inflight.get() > 0 && start.elapsed() < deadline {
        tokio::time::sleep(DRAIN_POLL).await;
    }
    tracing::info!(
        left = inflight.get(),
        waited_ms = start.elapsed().as_millis() as u64,
        "drained"
    );
}

/// The control plane and the admin listener of one run, stopped when dropped (at the end of
/// [`run`], or when its future is dropped).
#[derive(Default)]
struct Running {
    control: Option<ControlHandle>,
    tasks: Vec<JoinHandle<()>>,
}

impl Running {
    /// The gateway's own probe runs (after a review verdict, on `[probes] every`), unless
    /// `[probes] enabled = false`.
    fn start_probes(
        &mut self,
        config: &Config,
        store: &Arc<Store>,
        metrics: &Metrics,
        control: &ControlHandle,
    ) {
        if !config.probes.enabled {
            return;
        }
        let runner = crate::probe::runner::Runner {
            store: store.clone(),
            metrics: metrics.clone(),
            connect: Arc::new(probes::Connector {
                control: control.clone(),
                fetcher: Arc::new(CardFetcher::new()),
            }),
            settings: config.probes.clone(),
        };
        self.tasks.push(tokio::spawn(runner.run()));
    }

    /// One refresh worker per integration (first load from last-known-good, then fetch), the
    /// stale-mark consumer, and config hot reload (file change and SIGHUP).
    fn start_control(
        &mut self,
        config: &Config,
        store: &Arc<Store>,
        metrics: &Metrics,
        stale: StaleReceiver,
    ) -> Result<ControlHandle, ServerError> {
        let control_metrics = crate::control::metrics::ControlMetrics::register(&metrics.registry);
        let handle = ControlHandle::start(
            config.clone(),
            store.clone(),
            control_metrics,
            Arc::new(CardFetcher::new()),
            Some(stale),
        );
        self.control = Some(handle.clone());
        self.tasks.push(crate::control::reload::spawn_reloader(
            handle.clone(),
            config.path.clone(),
            crate::control::reload::DEFAULT_POLL,
        ));
        Ok(handle)
    }

    fn start_admin(
        &mut self,
        config: &Config,
        listener: TcpListener,
        state: crate::admin::AdminState,
    ) -> Result<(), ServerError> {
        let listener = listener
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpListener::from_std(listener))
            .map_err(|source| ServerError::Listener {
                which: Which::Admin,
                source,
            })?;
        let app = crate::admin::router(state);
        let (header_timeout, max_connections) =
            (config.limits.header_timeout, config.admin.max_connections);
        self.tasks.push(tokio::spawn(crate::admin::serve(
            listener,
            app,
            header_timeout,
            max_connections,
        )));
        Ok(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &self.control {
            c.shutdown();
        }
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The running data plane: pingora's listening service and what stops it.
struct DataPlane {
    stop: watch::Sender<bool>,
    service: JoinHandle<()>,
    /// Yields `None` once the service and every connection it accepted have ended.
    open: mpsc::Receiver<()>,
}

impl DataPlane {
    /// Starts pingora's HTTP proxy for `gateway`, inside the connection loop that applies
    /// `[limits]` (connection cap, idle and header deadlines), on `listener`; its accept loop
    /// runs on `runtime` (`None`: the current one).
    fn start(
        gateway: Gateway,
        config: &Config,
        listener: TcpListener,
        metrics: &Metrics,
        runtime: Option<tokio::runtime::Handle>,
    ) -> Result<DataPlane, ServerError> {
        let failed = |source| ServerError::Listener {
            which: Which::Proxy,
            source,
        };
        let proxy = crate::seam::proxy_app(gateway);
        let limited = crate::proxy::limits::Limited::new(proxy, config.limits, metrics.clone());
        let (open_tx, open) = mpsc::channel(1);
        let app = Tracked {
            app: Arc::new(limited),
            _open: open_tx,
        };
        let (stop, serve) = crate::seam::hand_off(
            "a2a-egress data plane",
            listener,
            app,
            DOWNSTREAM_READ_BUFFER,
        )
        .map_err(failed)?;
        let service = match runtime {
            Some(handle) => handle.spawn(serve),
            None => tokio::spawn(serve),
        };
        Ok(DataPlane {
            stop,
            service,
            open,
        })
    }

    /// Stops accepting and waits up to `deadline` for the open connections to close.
    async fn stop(mut self, deadline: Duration) {
        let _ = self.stop.send(true);
        let closed = tokio::time::timeout(deadline, async {
            let _ = (&mut self.service).await;
            self.open.recv().await
        })
        .await;
        if closed.is_err() {
            tracing::warn!(
                deadline_ms = deadline.as_millis() as u64,
                "data-plane connections still open at the close deadline"
            );
        }
    }
}

/// The data plane's pingora app with the sender [`DataPlane::stop`] waits on. pingora holds the
/// app in an `Arc` for as long as its service runs and each accepted connection is served, so the
/// sender, and with it the channel, closes when the last of them ends.
struct Tracked<A> {
    app: Arc<A>,
    _open: mpsc::Sender<()>,
}

#[async_trait]
impl<A: ServerApp + Send + Sync + 'static> ServerApp for Tracked<A> {
    async fn process_new(
        self: &Arc<Self>,
        stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        self.app.process_new(stream, shutdown).await
    }

    async fn cleanup(&self) {
        self.app.cleanup().await;
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;
    use std::path::Path;

    use super::*;

    fn config() -> Config {
        let text = "[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n";
        Config::parse(text, Path::new("/nonexistent/gateway.toml")).expect("test config")
    }

    fn get(stream: &mut TcpStream, path: &str) {
        let req = format!("GET {path} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
        stream.write_all(req.as_bytes()).expect("request sent");
    }

    /// The socket handed to `run` is the one served: a connection made (and a request sent) before
    /// `run` starts is answered, which a bind-release-rebind of the port would lose, and the port
    /// is released only when `run` returns.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_the_sockets_it_is_given_until_shutdown() {
        let listeners = Listeners::bind(&config().listen).expect("bound");
        let (proxy, admin) = listeners.local_addrs().expect("addresses");
        let mut early = TcpStream::connect(proxy).expect("queued by the kernel");
        get(&mut early, "/agents/nobody/.well-known/agent-card.json");

        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let gateway = tokio::spawn(run(config(), listeners, async {
            let _ = stopped.await;
        }));
        let (answer, health) = tokio::task::spawn_blocking(move || {
            let mut answer = String::new();
            let _ = early.read_to_string(&mut answer);
            let mut health = TcpStream::connect(admin).expect("admin listens");
            get(&mut health, "/healthz");
            let mut body = String::new();
            let _ = health.read_to_string(&mut body);
            (answer, body)
        })
        .await
        .expect("reader");
        assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
        assert!(answer.contains("UNKNOWN_INTEGRATION"), "{answer}");
        assert!(health.ends_with("ok\n"), "{health}");

        stop.send(()).expect("gateway running");
        gateway.await.expect("no panic").expect("clean shutdown");
        assert!(
            TcpStream::connect(proxy).is_err(),
            "the data plane stops listening when run returns"
        );
    }
}
