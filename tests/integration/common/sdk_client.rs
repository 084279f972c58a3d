//! Runs `tests/peers/sdk_client.py`, the driver around the official Python a2a-sdk 1.3.0 client,
//! or `tests/peers/js/sdk_client.mjs`, the JS `@a2a-js/sdk` 1.3.0 one, and collects the JSON lines
//! it prints (spawns Python or Node; the drivers talk loopback HTTP).
//! The driver's options and output lines are documented at the top of the Python file.

use std::process::Command;

use serde_json::Value;

/// What one driver run printed.
#[derive(Debug)]
pub struct SdkRun {
    /// Exit status: 0 ok, 2 an error line was printed, 3 tenant check failed, 4 usage.
    pub status: i32,
    /// Every stdout line, parsed.
    pub lines: Vec<Value>,
    /// stderr, for failure messages.
    pub stderr: String,
}

impl SdkRun {
    /// Lines of one `kind`.
    pub fn of_kind(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["kind"] == kind).collect()
    }

    /// The StreamResponse payloads of `event` lines, in order.
    pub fn events(&self) -> Vec<&Value> {
        self.of_kind("event")
            .into_iter()
            .map(|l| &l["event"])
            .collect()
    }

    /// The error line, if any.
    pub fn error(&self) -> Option<&Value> {
        self.of_kind("error").into_iter().next()
    }

    /// Panics (with everything printed) unless the run succeeded.
    pub fn ok(self) -> Self {
        assert_eq!(self.status, 0, "the SDK client driver failed: {self:#?}");
        self
    }

    /// The error line; panics if the run did not fail with one.
    pub fn err(&self) -> &Value {
        self.error().unwrap_or_else(|| {
            panic!("expected an error from the SDK client driver, got {self:#?}")
        })
    }

    /// The last task the run saw: the final `task` event or the `task` result.
    pub fn last_task(&self) -> &Value {
        self.lines
            .iter()
            .rev()
            .find_map(|l| match l["kind"].as_str() {
                Some("task") => Some(&l["task"]),
                Some("event") if l["event"].get("task").is_some() => Some(&l["event"]["task"]),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no task in {self:#?}"))
    }
}

/// Runs the driver with `args` (e.g. `["--url", base, "--op", "stream", "--text", "hi"]`).
pub fn sdk_client(args: &[&str]) -> SdkRun {
    let mut cmd = Command::new(super::python());
    cmd.arg(super::repo_root().join("tests/peers/sdk_client.py"))
        .args(args)
        .env("PYTHONUNBUFFERED", "1");
    driver(cmd, "sdk_client.py")
}

/// Runs `tests/peers/js/sdk_client.mjs`, the driver around the official JS `@a2a-js/sdk` 1.3.0
/// client: the same options (a subset) and the same output lines as [`sdk_client`].
pub fn js_client(args: &[&str]) -> SdkRun {
    let mut cmd = Command::new("node");
    cmd.current_dir(super::repo_root().join("tests/peers/js"))
        .arg("sdk_client.mjs")
        .args(args);
    driver(cmd, "sdk_client.mjs")
}

/// Runs one driver and collects its JSON lines.
fn driver(mut cmd: Command, name: &str) -> SdkRun {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{name} printed a non-JSON line ({e}): {l}"))
        })
        .collect();
    SdkRun {
        status: out.status.code().unwrap_or(-1),
        lines,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
