//! `a2a-egress serve`: wires config, store, control plane, admin listener and the pingora data
//! plane together, and drains on SIGTERM/SIGINT (I/O; `anyhow` allowed here).
//!
//! Start-up order: bind the admin listener (port 0 allowed), pick the proxy port, install a
//! snapshot with every integration pending, start the control runtime (first card loads, stale
//! marks) and the admin server, start pingora, and once both listeners accept connections print
//! one JSON line on stdout: `{"proxy": "127.0.0.1:P", "admin": "127.0.0.1:A", "public_url": …}`
//! (tests and scripts read it, as they read the reference agent's).

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_trait::async_trait;
use pingora::server::configuration::ServerConf;
use pingora::server::{RunArgs, Server, ShutdownSignal, ShutdownSignalWatch};

use crate::config::Config;
use crate::control::fetch::CardFetcher;
use crate::metrics::Metrics;
use crate::profile::snapshot::{Store, stale_channel};
use crate::proxy::Gateway;

/// Longest wait for in-flight calls after SIGTERM/SIGINT before the runtimes stop.
const DRAIN_DEADLINE: Duration = Duration::from_secs(30);

/// Waits for SIGTERM or SIGINT, then drains: new calls are refused (and `/readyz` fails) while
/// in-flight ones finish, up to [`DRAIN_DEADLINE`]. pingora's own grace period is a fixed sleep;
/// this one ends as soon as the last call does, so an idle gateway stops at once.
struct Drain {
    draining: Arc<AtomicBool>,
    inflight: prometheus::IntGauge,
}

#[async_trait]
impl ShutdownSignalWatch for Drain {
    async fn recv(&self) -> ShutdownSignal {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::error!("cannot install signal handlers; shutting down");
            return ShutdownSignal::FastShutdown;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: draining"),
            _ = int.recv() => tracing::info!("SIGINT: draining"),
        }
        self.draining.store(true, Ordering::SeqCst);
        let start = Instant::now();
        while self.inflight.get() > 0 && start.elapsed() < DRAIN_DEADLINE {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tracing::info!(
            left = self.inflight.get(),
            waited_ms = start.elapsed().as_millis() as u64,
            "drained"
        );
        ShutdownSignal::GracefulTerminate
    }
}

fn init_tracing() {
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("A2A_EGRESS_LOG").unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new("info,pingora_core=warn,pingora_proxy=warn")
        });
    // pingora's HTTP/1 client logs each request header it writes as raw bytes at TRACE, the
    // integration's `Authorization` included (its Debug of header maps redacts values marked
    // sensitive; raw bytes cannot be). Those events are dropped whatever the filter asks for, so no
    // log level shows a credential.
    let no_raw_headers = tracing_subscriber::filter::filter_fn(|m| {
        !(*m.level() == tracing::Level::TRACE && m.target().starts_with("pingora_core::protocols"))
    });
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter)
        .with_filter(no_raw_headers);
    // try_init: tests may run several gateways in one process.
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

fn wait_listening(addr: SocketAddr, deadline: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Runs the gateway until SIGTERM/SIGINT. Returns after a clean shutdown.
pub fn run(config: Config) -> anyhow::Result<()> {
    init_tracing();
    crate::control::fetch::install_crypto_provider();
    let config = Arc::new(config);

    let admin_listener = TcpListener::bind(config.listen.admin)
        .with_context(|| format!("binding the admin listener on {}", config.listen.admin))?;
    admin_listener.set_nonblocking(true)?;
    let admin_addr = admin_listener.local_addr()?;
    let proxy_addr = if config.listen.proxy.port() == 0 {
        // pingora binds by address only: pick a free port, release it, hand it over. The kernel
        // does not reuse an ephemeral port at once, so the window is harmless in practice.
        let probe = TcpListener::bind(config.listen.proxy)
            .with_context(|| format!("binding {}", config.listen.proxy))?;
        probe.local_addr()?
    } else {
        config.listen.proxy
    };
    let public_url = config
        .listen
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{proxy_addr}"));

    let metrics = Metrics::new();
    let store = Arc::new(Store::new(crate::control::startup::pending_snapshot(
        &config,
    )));
    metrics.observe_snapshot(&store.load());
    let (stale_tx, stale_rx) = stale_channel(1024);
    let draining = Arc::new(AtomicBool::new(false));

    let control_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("a2a-egress-control")
        .enable_all()
        .build()
        .context("starting the control runtime")?;
    // The control plane: one refresh worker per integration (first load from last-known-good,
    // then fetch), the stale-mark consumer, and config hot reload (file change and SIGHUP).
    let control_metrics = crate::control::metrics::ControlMetrics::register(&metrics.registry)
        .context("registering the control-plane metrics")?;
    let control = {
        let _rt = control_rt.enter();
        let handle = crate::control::refresh::ControlHandle::start(
            (*config).clone(),
            store.clone(),
            control_metrics,
            Arc::new(CardFetcher::new()),
            Some(stale_rx),
        );
        crate::control::reload::spawn_reloader(
            handle.clone(),
            config.path.clone(),
            crate::control::reload::DEFAULT_POLL,
        );
        handle
    };
    let admin = crate::admin::router(crate::admin::AdminState {
        store: store.clone(),
        metrics: metrics.clone(),
        draining: draining.clone(),
        control: Some(control.clone()),
        access: crate::admin::Access::new(&config.admin, metrics.clone()),
    });
    let (header_timeout, admin_connections) =
        (config.limits.header_timeout, config.admin.max_connections);
    control_rt.spawn(async move {
        match tokio::net::TcpListener::from_std(admin_listener) {
            Ok(l) => crate::admin::serve(l, admin, header_timeout, admin_connections).await,
            Err(e) => tracing::error!(error = %e, "admin listener failed"),
        }
    });

    // Per-instance paths: two gateways on one machine (parallel tests) must not share them.
    let run_dir = std::env::temp_dir().join(format!("a2a-egress-{}", std::process::id()));
    std::fs::create_dir_all(&run_dir)?;
    let conf = ServerConf {
        pid_file: run_dir.join("pingora.pid").display().to_string(),
        upgrade_sock: run_dir.join("upgrade.sock").display().to_string(),
        // Draining is done by `Drain` before pingora's shutdown starts; these only bound the rest.
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(1),
        threads: 2,
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let gateway = Gateway {
        store: store.clone(),
        metrics: metrics.clone(),
        stale: stale_tx,
        public_url: public_url.clone(),
        default_data_class: config.policy.default_data_class.clone(),
        draining: draining.clone(),
        control: Some(control.clone()),
        limits: crate::proxy::limits::RequestLimits::new(&config.limits),
        client: crate::proxy::client::Client::new(),
    };
    // pingora's HTTP proxy, inside the connection loop that applies `[limits]` (connection cap,
    // idle and header deadlines) to every downstream connection.
    let proxy = pingora::proxy::http_proxy(&server.configuration, gateway);
    let limited = crate::proxy::limits::Limited::new(proxy, config.limits, metrics.clone());
    let mut svc =
        pingora::services::listening::Service::new("a2a-egress data plane".into(), limited);
    svc.add_tcp(&proxy_addr.to_string());
    server.add_service(svc);

    std::thread::spawn(move || {
        if wait_listening(proxy_addr, Duration::from_secs(30))
            && wait_listening(admin_addr, Duration::from_secs(30))
        {
            let line = serde_json::json!({
                "proxy": proxy_addr.to_string(),
                "admin": admin_addr.to_string(),
                "public_url": public_url,
            });
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        } else {
            tracing::error!("listeners did not come up");
        }
    });

    server.run(RunArgs {
        shutdown_signal: Box::new(Drain {
            draining,
            inflight: metrics.inflight.clone(),
        }),
    });
    control.shutdown();
    control_rt.shutdown_timeout(Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(&run_dir);
    tracing::info!("stopped");
    Ok(())
}

/// Loads the config for `serve` (default file when not given).
pub fn load(path: Option<PathBuf>) -> anyhow::Result<Config> {
    let path = path.unwrap_or_else(|| PathBuf::from(super::DEFAULT_CONFIG));
    Config::load(&path).map_err(|e| anyhow::anyhow!("{e}"))
}
