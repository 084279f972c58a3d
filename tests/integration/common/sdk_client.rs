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

/// What a 1.0 SDK client (`run`: either driver, its `--url` and `--binding` given) sees of an
/// agent that behaves as the test peers do (`message …` answers a message, `task …` is a task
/// whose artifact echoes the text, `hold …` a task left working until canceled): a message, a
/// blocking task with its artifact and history, a stream ending completed, a read, an unknown
/// task, a held task canceled and a second cancel refused. The errors are judged by their
/// `ErrorInfo` reason, which both drivers print.
pub fn drives_tasks(run: &dyn Fn(&[&str]) -> SdkRun) {
    let sent = run(&["--op", "send", "--text", "message hi"]).ok();
    let m = &sent.events()[0]["message"];
    assert_eq!(m["role"], "ROLE_AGENT", "{sent:#?}");
    assert_eq!(m["parts"][0]["text"], "message hi", "{sent:#?}");
    let sent = run(&["--op", "send", "--text", "task one"]).ok();
    let task = &sent.events()[0]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent:#?}");
    assert_eq!(
        task["artifacts"][0]["parts"],
        serde_json::json!([{"text": "task one"}]),
        "{sent:#?}"
    );
    assert_eq!(task["history"][0]["role"], "ROLE_USER", "{sent:#?}");
    assert_eq!(
        task["history"][0]["parts"][0]["text"], "task one",
        "{sent:#?}"
    );
    let id = task["id"].as_str().unwrap().to_owned();
    let streamed = run(&["--op", "stream", "--text", "task two"]).ok();
    let ev = streamed.events();
    assert!(ev[0].get("task").is_some(), "{streamed:#?}");
    assert!(
        ev.iter()
            .any(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"] == "task two"),
        "{streamed:#?}"
    );
    assert_eq!(
        ev.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{streamed:#?}"
    );
    let got = run(&["--op", "get-task", "--task-id", &id]).ok();
    assert_eq!(
        got.of_kind("task")[0]["task"]["id"],
        id.as_str(),
        "{got:#?}"
    );
    let missing = run(&["--op", "get-task", "--task-id", "no-such-task"]);
    assert_eq!(missing.err()["reason"], "TASK_NOT_FOUND", "{missing:#?}");
    let held = run(&["--op", "send", "--text", "hold on", "--return-immediately"]).ok();
    let task = &held.events()[0]["task"];
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
            .contains(&task["status"]["state"].as_str().unwrap()),
        "{held:#?}"
    );
    let held_id = task["id"].as_str().unwrap().to_owned();
    let canceled = run(&["--op", "cancel", "--task-id", &held_id]).ok();
    assert_eq!(
        canceled.of_kind("task")[0]["task"]["status"]["state"],
        "TASK_STATE_CANCELED",
        "{canceled:#?}"
    );
    let again = run(&["--op", "cancel", "--task-id", &held_id]);
    assert_eq!(again.err()["reason"], "TASK_NOT_CANCELABLE", "{again:#?}");
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
