//! A guard for a child process that announces itself with one JSON line on stdout (process I/O).
//!
//! The child must print its first stdout line as JSON (e.g. `{"event":"listening","addr":"127.0.0.1:41234"}`)
//! within a deadline. After that both pipes are drained by background threads for the child's whole
//! life, so it never blocks on a full pipe; stderr is kept (up to [`STDERR_KEEP_BYTES`]) for failure
//! messages and for tests that search a child's whole log.
//! Dropping the guard kills the child and reaps it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How many trailing stderr lines [`ChildGuard::stderr_tail`] shows.
const STDERR_TAIL_LINES: usize = 200;
/// Most stderr bytes kept per child; later lines are counted but dropped.
pub const STDERR_KEEP_BYTES: usize = 256 << 20;

/// Every stderr line so far (up to [`STDERR_KEEP_BYTES`]).
#[derive(Default)]
struct StderrLog {
    lines: Vec<String>,
    bytes: usize,
    dropped: usize,
}

/// A running child process, killed and reaped on drop.
pub struct ChildGuard {
    name: String,
    child: Child,
    first: serde_json::Value,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<StderrLog>>,
    threads: Vec<JoinHandle<()>>,
}

impl ChildGuard {
    /// Spawns `cmd` (stdin piped and held open, stdout/stderr piped) and waits up to `deadline`
    /// for its first stdout line, which must be a JSON value. Panics with the child's stderr when
    /// it exits early, stays silent past the deadline, or prints something that is not JSON.
    pub fn spawn(name: &str, mut cmd: Command, deadline: Duration) -> ChildGuard {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot spawn {cmd:?}: {e}"));
        let stdout_pipe = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");

        let stderr = Arc::new(Mutex::new(StderrLog::default()));
        let stderr_thread = {
            let stderr = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr_pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut log = stderr.lock().unwrap();
                    if log.bytes + line.len() > STDERR_KEEP_BYTES {
                        log.dropped += 1;
                        continue;
                    }
                    log.bytes += line.len() + 1;
                    log.lines.push(line);
                }
            })
        };

        let stdout = Arc::new(Mutex::new(Vec::new()));
        let (first_tx, first_rx) = mpsc::channel::<String>();
        let stdout_thread = {
            let stdout = Arc::clone(&stdout);
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stdout_pipe).lines();
                if let Some(Ok(line)) = lines.next() {
                    let _ = first_tx.send(line);
                }
                drop(first_tx);
                for line in lines {
                    let Ok(line) = line else { break };
                    stdout.lock().unwrap().push(line);
                }
            })
        };

        let mut guard = ChildGuard {
            name: name.to_owned(),
            child,
            first: serde_json::Value::Null,
            stdout,
            stderr,
            threads: vec![stderr_thread, stdout_thread],
        };
        match first_rx.recv_timeout(deadline) {
            Ok(line) => match serde_json::from_str(&line) {
                Ok(v) => guard.first = v,
                Err(e) => guard.fail(&format!("first stdout line is not JSON ({e}): {line:?}")),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => {
                guard.fail(&format!("printed no first line within {deadline:?}"))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                guard.fail("closed stdout before printing its first line")
            }
        }
        guard
    }

    /// Kills the child, then panics with `why`, its exit status and its stderr tail.
    fn fail(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let status = self.child.wait().ok();
        // The pipes are closed now, so the readers finish and the tail is complete.
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        panic!(
            "{}: {why} (exit status {status:?})\n--- stderr tail ---\n{}",
            self.name,
            self.stderr_tail()
        );
    }

    /// The first stdout line, parsed.
    pub fn first(&self) -> &serde_json::Value {
        &self.first
    }

    /// `addr` of the first line as a socket address (panics if absent).
    pub fn addr(&self) -> SocketAddr {
        self.first["addr"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "{}: first line has no valid \"addr\": {}",
                    self.name, self.first
                )
            })
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last stderr lines (up to 200), joined with newlines.
    pub fn stderr_tail(&self) -> String {
        let log = self.stderr.lock().unwrap();
        let from = log.lines.len().saturating_sub(STDERR_TAIL_LINES);
        log.lines[from..].join("\n")
    }

    /// Every stderr line so far and how many were dropped past [`STDERR_KEEP_BYTES`].
    pub fn stderr_all(&self) -> (Vec<String>, usize) {
        let log = self.stderr.lock().unwrap();
        (log.lines.clone(), log.dropped)
    }

    /// stdout lines printed after the first one, so far.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// Whether the child has exited (reaps it if so).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    /// Sends SIGTERM (through `kill(1)`, to keep the tests free of unsafe FFI).
    pub fn terminate(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "{}: could not send SIGTERM", self.name);
    }

    /// Waits up to `limit` for the child to exit; `None` if it is still running.
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<ExitStatus> {
        wait_exit(&mut self.child, limit)
    }
}

/// Runs `cmd` to completion with its stdout and stderr captured, for at most `limit` (scaled
/// like every test deadline); kills it and panics naming `what` when it runs longer. For short
/// commands (`ip`, `nft`, a shell script) whose output is small: both pipes are drained by
/// threads, so a chatty child cannot block on a full pipe either.
pub fn run_within(what: &str, cmd: &mut Command, limit: Duration) -> std::process::Output {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot spawn {cmd:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            out
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let Some(status) = wait_exit(&mut child, limit) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what}: {cmd:?} still running after {limit:?}");
    };
    std::process::Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// Waits up to `limit` (scaled like every test deadline, see [`super::eventually`]) for `child`
/// to exit, blocking the thread; `None` if it is still running.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let wait = super::eventually::Wait::new(limit, super::eventually::DEFAULT_EVERY);
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return Some(s);
        }
        if wait.expired() {
            return None;
        }
        wait.pause_blocking();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
