//! The framework's own cost, for `scripts/bench.sh`: a bare pingora proxy that forwards every
//! request to one upstream and only adds `A2A-Version: 1.0` (process and network I/O).
//!
//! `bare-pingora LISTEN UPSTREAM` (both `host:port`). Nothing of the gateway runs here — no
//! routing, policy, shaping, metrics or logs — so the gateway's cost per request minus this one is
//! the gateway's own. The body is streamed through untouched. It uses the same pingora version
//! and features, the same rustls provider, and (like the gateway) one multi-threaded runtime whose
//! thread count `BARE_PINGORA_THREADS` sets (default 1: the proxy under test is pinned to one core).

use std::net::SocketAddr;

use async_trait::async_trait;
use pingora::prelude::HttpPeer;
use pingora::proxy::{ProxyHttp, Session};
use pingora::server::Server;
use pingora::server::configuration::ServerConf;

struct Bare {
    upstream: SocketAddr,
    authority: String,
}

#[async_trait]
impl ProxyHttp for Bare {
    type CTX = ();

    fn new_ctx(&self) {}

    async fn upstream_peer(
        &self,
        _session: &mut Session,
        _ctx: &mut (),
    ) -> pingora::Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(self.upstream, false, String::new())))
    }

    async fn upstream_request_filter(
        &self,
        _session: &mut Session,
        req: &mut pingora::http::RequestHeader,
        _ctx: &mut (),
    ) -> pingora::Result<()> {
        req.insert_header("host", self.authority.as_str())?;
        req.insert_header("a2a-version", "1.0")?;
        Ok(())
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(listen), Some(upstream)) = (args.next(), args.next()) else {
        eprintln!("usage: bare-pingora LISTEN UPSTREAM   (host:port each)");
        std::process::exit(64);
    };
    let Ok(addr) = upstream.parse::<SocketAddr>() else {
        eprintln!("UPSTREAM must be an ip:port, got {upstream:?}");
        std::process::exit(64);
    };
    let threads = std::env::var("BARE_PINGORA_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let pid = std::process::id();
    let conf = ServerConf {
        threads,
        // Unique paths: several instances (and the gateway's tests) may run on one machine.
        pid_file: format!("/tmp/bare-pingora-{pid}.pid"),
        upgrade_sock: format!("/tmp/bare-pingora-{pid}.sock"),
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(1),
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let bare = Bare {
        upstream: addr,
        authority: upstream.clone(),
    };
    let mut service = pingora::proxy::http_proxy_service(&server.configuration, bare);
    service.add_tcp(&listen);
    server.add_service(service);
    println!("{{\"proxy\":\"{listen}\",\"upstream\":\"{upstream}\"}}");
    server.run_forever();
}
