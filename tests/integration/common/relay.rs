//! The one loopback TCP relay to put in front of a real agent (an SDK agent started with
//! `--interface-base` pointing at the relay): it forwards bytes both ways, counts connections,
//! can hold the answers back until the test releases them, so a call stays in flight exactly as
//! long as a test needs, and can cut its first connection when the next request arrives on it,
//! as an agent closing a kept-alive connection just as it is reused (loopback network I/O, tokio
//! tasks on the test's runtime).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
    cut: Arc<AtomicBool>,
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
            cut: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Starts relaying every accepted connection to `to`.
    pub fn forward_to(&mut self, to: SocketAddr) {
        let listener = self.listener.take().expect("forwarding once");
        let (open, seen, cut) = (
            self.open.clone(),
            self.connections.clone(),
            self.cut.clone(),
        );
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
                let cut = first.then(|| cut.clone());
                tokio::spawn(relay(inbound, to, open.subscribe(), cut));
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

    /// From now on, the first connection is closed (both ways, without forwarding) when the next
    /// request bytes arrive on it.
    pub fn cut_first(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Relays one connection; `cut` is set only for the first one.
async fn relay(
    inbound: TcpStream,
    to: SocketAddr,
    mut open: watch::Receiver<bool>,
    cut: Option<Arc<AtomicBool>>,
) {
    let Ok(outbound) = TcpStream::connect(to).await else {
        return;
    };
    let (mut in_read, mut in_write) = inbound.into_split();
    let (mut out_read, mut out_write) = outbound.into_split();
    // Resolves `true` when the connection is to be cut, `false` when the caller's side ended.
    let requests = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match in_read.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => n,
            };
            if cut.as_ref().is_some_and(|c| c.load(Ordering::SeqCst)) {
                return true;
            }
            if out_write.write_all(&buf[..n]).await.is_err() {
                return false;
            }
        }
    };
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
    tokio::pin!(requests, answers);
    let mut answered = false;
    loop {
        tokio::select! {
            // Cut: returning drops all four halves, closing both sockets with no answer.
            cut = &mut requests => {
                if !cut && !answered {
                    answers.await;
                }
                return;
            }
            () = &mut answers, if !answered => answered = true,
        }
    }
}
