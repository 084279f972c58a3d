//! A loopback TCP relay to put in front of a real agent (an SDK agent started with
//! `--interface-base` pointing at the relay): it forwards bytes both ways and can hold the answers
//! back until the test releases them, so a call stays in flight exactly as long as a test needs
//! (loopback network I/O, tokio tasks on the test's runtime).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A bound relay; it forwards once [`Relay::forward_to`] is called.
pub struct Relay {
    listener: Option<TcpListener>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// `true` while answers flow; `false` holds them.
    open: watch::Sender<bool>,
    connections: Arc<AtomicUsize>,
}

impl Relay {
    /// Binds a port on loopback; answers flow until [`hold`](Self::hold).
    pub async fn bind() -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binding");
        let url = format!("http://{}", listener.local_addr().expect("bound"));
        Relay {
            listener: Some(listener),
            url,
            open: watch::channel(true).0,
            connections: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Starts relaying every accepted connection to `to`.
    pub fn forward_to(&mut self, to: SocketAddr) {
        let listener = self.listener.take().expect("forwarding once");
        let (open, seen) = (self.open.clone(), self.connections.clone());
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(relay(inbound, to, open.subscribe()));
            }
        });
    }

    /// From now on, answer bytes wait in the relay (requests still reach the agent).
    pub fn hold(&self) {
        self.open.send_replace(false);
    }

    /// Lets held and later answers through.
    pub fn release(&self) {
        self.open.send_replace(true);
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn relay(inbound: TcpStream, to: SocketAddr, mut open: watch::Receiver<bool>) {
    let Ok(outbound) = TcpStream::connect(to).await else {
        return;
    };
    let (mut in_read, mut in_write) = inbound.into_split();
    let (mut out_read, mut out_write) = outbound.into_split();
    let requests = tokio::io::copy(&mut in_read, &mut out_write);
    let answers = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match out_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if open.wait_for(|o| *o).await.is_err() {
                break;
            }
            if in_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = in_write.shutdown().await;
    };
    let _ = tokio::join!(requests, answers);
}
