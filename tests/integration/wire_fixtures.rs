//! The wire captures of the official A2A 0.3 SDK agents (`tests/fixtures/wire/v03/`, recorded by
//! `tests/peers/v03/capture.py` from a2a-sdk 0.3.26 and @a2a-js/sdk 0.3.14): every file parses as
//! one exchange of the full peer × binding × exchange matrix, the README names each, and every
//! verdict the README gives is re-checked here against the files, and against a fresh capture
//! from the real SDK agents (runs `capture.py`: process and loopback I/O), so neither the files
//! nor the wire can drift from the README unnoticed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

const PEERS: [&str; 2] = ["python", "js"];
const BINDINGS: [&str; 2] = ["jsonrpc", "rest"];
/// Exchanges captured on both bindings.
const EXCHANGES: [&str; 14] = [
    "send",
    "send-message-result",
    "send-non-blocking",
    "stream",
    "get",
    "get-unknown-task",
    "resubscribe",
    "cancel",
    "push-set",
    "push-get",
    "push-list",
    "push-delete",
    "extended-card",
    "stream-refused",
];
/// Exchanges captured on HTTP+JSON only: JSON-RPC's plain `send` already carries no
/// `configuration` at all, so it is the JSON-RPC request without `blocking` (fact 8).
const REST_ONLY: [&str; 1] = ["send-no-blocking-field"];

/// Longest the fresh capture may run before it is killed (scaled like every test deadline).
const CAPTURE_DEADLINE: Duration = Duration::from_secs(300);

fn dir() -> PathBuf {
    crate::common::repo_root().join("tests/fixtures/wire/v03")
}

/// The captures in one directory: the committed set, or a fresh one.
struct Cap<'a>(&'a Path);

impl Cap<'_> {
    /// The capture `name` (without `.json`).
    fn capture(&self, name: &str) -> Value {
        let path = self.0.join(format!("{name}.json"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn response(&self, name: &str) -> Value {
        self.capture(name)["response"].clone()
    }

    fn status(&self, name: &str) -> u64 {
        self.response(name)["status"].as_u64().expect("status")
    }

    fn body(&self, name: &str) -> Value {
        self.response(name)["body"].clone()
    }

    /// The SSE events of a stream capture, each its `data:` lines joined and parsed.
    fn events(&self, name: &str) -> Vec<Value> {
        let r = self.response(name);
        let events = r["events"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no events"));
        events
            .iter()
            .map(|ev| {
                let text: String = ev
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| {
                        let l = l.as_str().unwrap();
                        l.strip_prefix("data:").expect("a data: line").trim_start()
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"))
            })
            .collect()
    }

    /// How many `data:` lines each event of a stream capture has.
    fn data_lines(&self, name: &str) -> Vec<usize> {
        self.response(name)["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_array().unwrap().len())
            .collect()
    }
}

fn expected_names() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for peer in PEERS {
        for binding in BINDINGS {
            for ex in EXCHANGES {
                out.insert(format!("{peer}-{binding}-{ex}.json"));
            }
        }
        for ex in REST_ONLY {
            out.insert(format!("{peer}-rest-{ex}.json"));
        }
    }
    out
}

/// Every file parses as one exchange and together they are exactly the peer × binding × exchange
/// matrix.
fn matrix(c: &Cap) {
    let mut found = BTreeSet::new();
    for e in std::fs::read_dir(c.0).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            found.insert(p.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert_eq!(found, expected_names(), "captures on disk vs the matrix");
    for name in &found {
        let stem = name.strip_suffix(".json").unwrap();
        let x = c.capture(stem);
        let (peer, binding, ex) = (
            x["peer"].as_str().unwrap(),
            x["binding"].as_str().unwrap(),
            x["exchange"].as_str().unwrap(),
        );
        assert_eq!(&format!("{peer}-{binding}-{ex}.json"), name);
        assert!(x["request"]["method"].is_string() && x["request"]["path"].is_string());
        let r = &x["response"];
        assert!(r["status"].is_u64(), "{name}");
        assert!(r["content_type"].is_string(), "{name}");
        let kinds = ["body", "text", "events"]
            .iter()
            .filter(|k| r.get(**k).is_some())
            .count();
        assert_eq!(kinds, 1, "{name}: exactly one of body, text, events");
        if r.get("events").is_some() {
            c.events(stem);
        }
    }
}

fn facts_1_2_streaming_refused_python_32603_js_32004(c: &Cap) {
    let e = c.body("python-jsonrpc-stream-refused");
    assert_eq!(c.status("python-jsonrpc-stream-refused"), 200);
    assert_eq!(e["error"]["code"], -32603, "{e}");
    let r = c.response("python-rest-stream-refused");
    assert_eq!(r["status"], 500, "{r}");
    assert!(
        r["content_type"]
            .as_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(r["text"], "Internal Server Error");
    let e = c.body("js-jsonrpc-stream-refused");
    assert_eq!(c.status("js-jsonrpc-stream-refused"), 200);
    assert_eq!(e["error"]["code"], -32004, "{e}");
    assert_eq!(c.status("js-rest-stream-refused"), 400);
    assert_eq!(c.body("js-rest-stream-refused")["code"], -32004);
}

fn fact_3_rest_message_parts_are_content_artifact_parts_stay_parts(c: &Cap) {
    for peer in PEERS {
        let t = c.body(&format!("{peer}-rest-send"))["task"].clone();
        let m = &t["history"][0];
        assert!(
            m.get("content").is_some() && m.get("parts").is_none(),
            "{peer}: {m}"
        );
        let a = &t["artifacts"][0];
        assert!(
            a.get("parts").is_some() && a.get("content").is_none(),
            "{peer}: {a}"
        );
        // JSON-RPC keeps `parts` on both.
        let t = c.body(&format!("{peer}-jsonrpc-send"))["result"].clone();
        assert!(t["history"][0].get("parts").is_some(), "{peer}: {t}");
    }
}

fn fact_4_rest_states_are_task_state_with_cancelled_spelt_twice_l(c: &Cap) {
    for peer in PEERS {
        assert_eq!(
            c.body(&format!("{peer}-rest-cancel"))["status"]["state"],
            "TASK_STATE_CANCELLED"
        );
        assert_eq!(
            c.body(&format!("{peer}-rest-get"))["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        assert_eq!(
            c.body(&format!("{peer}-jsonrpc-cancel"))["result"]["status"]["state"],
            "canceled"
        );
    }
}

fn fact_5_refuted_a_rest_message_result_is_message_not_msg(c: &Cap) {
    for peer in PEERS {
        let b = c.body(&format!("{peer}-rest-send-message-result"));
        assert!(b.get("message").is_some(), "{peer}: {b}");
        assert!(b.get("msg").is_none(), "{peer}: {b}");
    }
}

fn fact_6_python_rest_spreads_one_event_over_several_data_lines(c: &Cap) {
    for name in ["python-rest-stream", "python-rest-resubscribe"] {
        let lines = c.data_lines(name);
        assert!(
            !lines.is_empty() && lines.iter().all(|n| *n > 1),
            "{name}: {lines:?}"
        );
    }
    for name in [
        "python-jsonrpc-stream",
        "js-jsonrpc-stream",
        "js-rest-stream",
    ] {
        let lines = c.data_lines(name);
        assert!(
            !lines.is_empty() && lines.iter().all(|n| *n == 1),
            "{name}: {lines:?}"
        );
    }
    // Joined, each multi-line event is one StreamResponse.
    let first = &c.events("python-rest-stream")[0];
    assert!(first.get("task").is_some(), "{first}");
}

fn fact_7_js_rest_status_codes_201_202_204_python_200(c: &Cap) {
    for (ex, code) in [
        ("send", 201),
        ("push-set", 201),
        ("cancel", 202),
        ("push-delete", 204),
    ] {
        assert_eq!(c.status(&format!("js-rest-{ex}")), code, "js {ex}");
        // Python's push config delete is 405 (fact 10), not 200.
        let python = if ex == "push-delete" { 405 } else { 200 };
        assert_eq!(
            c.status(&format!("python-rest-{ex}")),
            python,
            "python {ex}"
        );
    }
    assert_eq!(c.body("js-rest-push-delete"), Value::Null);
}

fn fact_8_python_rest_without_blocking_is_non_blocking_js_blocks(c: &Cap) {
    assert_eq!(
        c.body("python-rest-send-no-blocking-field")["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert_eq!(
        c.body("js-rest-send-no-blocking-field")["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // JSON-RPC: a `message/send` with no `configuration` at all blocks in both SDKs (against
    // FACTS.md §11's "0.3 `blocking` defaults to not blocking"; the README says so).
    for peer in PEERS {
        let name = format!("{peer}-jsonrpc-send");
        let params = &c.capture(&name)["request"]["body"]["params"];
        assert!(params.get("configuration").is_none(), "{name}: {params}");
        let task = &c.body(&name)["result"];
        assert_eq!(task["status"]["state"], "completed", "{name}: {task}");
        assert!(task["artifacts"][0].is_object(), "{name}: {task}");
    }
}

fn fact_9_python_rest_errors_have_no_code_js_rest_errors_do(c: &Cap) {
    assert_eq!(c.status("python-rest-get-unknown-task"), 404);
    let b = c.body("python-rest-get-unknown-task");
    assert!(b.get("code").is_none() && b["message"].is_string(), "{b}");
    assert_eq!(c.status("js-rest-get-unknown-task"), 404);
    assert_eq!(c.body("js-rest-get-unknown-task")["code"], -32001);
}

fn fact_10_python_rest_push_list_500_delete_405(c: &Cap) {
    assert_eq!(c.status("python-rest-push-list"), 500);
    assert_eq!(c.status("python-rest-push-delete"), 405);
    assert_eq!(c.status("js-rest-push-list"), 200);
    assert!(c.body("js-rest-push-list")["configs"].is_array());
}

fn facts_11_to_14_seen_on_the_way(c: &Cap) {
    // 11: Python's delete answer has no `result` member; JS's is null.
    let p = c.body("python-jsonrpc-push-delete");
    assert!(p.get("result").is_none() && p.get("error").is_none(), "{p}");
    let j = c.body("js-jsonrpc-push-delete");
    assert_eq!(j.get("result"), Some(&Value::Null), "{j}");
    // 12: JS replays the task on resubscribe, Python only sends later updates.
    assert_eq!(
        c.events("js-jsonrpc-resubscribe")[0]["result"]["kind"],
        "task"
    );
    assert_eq!(
        c.events("python-jsonrpc-resubscribe")[0]["result"]["kind"],
        "status-update"
    );
    assert!(c.events("js-rest-resubscribe")[0].get("task").is_some());
    assert!(
        c.events("python-rest-resubscribe")[0]
            .get("statusUpdate")
            .is_some()
    );
    // 13: an unknown task: -32001 on JSON-RPC (HTTP 200), 404 on REST.
    for peer in PEERS {
        let n = format!("{peer}-jsonrpc-get-unknown-task");
        assert_eq!(
            (c.status(&n), c.body(&n)["error"]["code"].clone()),
            (200, (-32001).into())
        );
        assert_eq!(c.status(&format!("{peer}-rest-get-unknown-task")), 404);
    }
    // 14: the extended card is a 0.3 card on both bindings.
    for peer in PEERS {
        let card = c.body(&format!("{peer}-jsonrpc-extended-card"))["result"].clone();
        assert_eq!(card["protocolVersion"], "0.3.0", "{peer}: {card}");
        assert!(card["name"].as_str().unwrap().ends_with("(extended)"));
        let card = c.body(&format!("{peer}-rest-extended-card"));
        assert_eq!(card["protocolVersion"], "0.3.0", "{peer}: {card}");
    }
}

#[test]
fn the_readme_names_every_capture() {
    let readme = std::fs::read_to_string(dir().join("README.md")).unwrap();
    for name in expected_names() {
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name} is not in tests/fixtures/wire/v03/README.md"
        );
    }
}

/// One README verdict, checked over one set of captures.
type Check = fn(&Cap);

/// Every verdict of the README, as a check over one set of captures.
const FACTS: [(&str, Check); 10] = [
    (
        "facts_1_2_streaming_refused_python_32603_js_32004",
        facts_1_2_streaming_refused_python_32603_js_32004,
    ),
    (
        "fact_3_rest_message_parts_are_content_artifact_parts_stay_parts",
        fact_3_rest_message_parts_are_content_artifact_parts_stay_parts,
    ),
    (
        "fact_4_rest_states_are_task_state_with_cancelled_spelt_twice_l",
        fact_4_rest_states_are_task_state_with_cancelled_spelt_twice_l,
    ),
    (
        "fact_5_refuted_a_rest_message_result_is_message_not_msg",
        fact_5_refuted_a_rest_message_result_is_message_not_msg,
    ),
    (
        "fact_6_python_rest_spreads_one_event_over_several_data_lines",
        fact_6_python_rest_spreads_one_event_over_several_data_lines,
    ),
    (
        "fact_7_js_rest_status_codes_201_202_204_python_200",
        fact_7_js_rest_status_codes_201_202_204_python_200,
    ),
    (
        "fact_8_python_rest_without_blocking_is_non_blocking_js_blocks",
        fact_8_python_rest_without_blocking_is_non_blocking_js_blocks,
    ),
    (
        "fact_9_python_rest_errors_have_no_code_js_rest_errors_do",
        fact_9_python_rest_errors_have_no_code_js_rest_errors_do,
    ),
    (
        "fact_10_python_rest_push_list_500_delete_405",
        fact_10_python_rest_push_list_500_delete_405,
    ),
    (
        "facts_11_to_14_seen_on_the_way",
        facts_11_to_14_seen_on_the_way,
    ),
];

#[test]
fn the_committed_captures_are_the_full_matrix_and_show_every_fact() {
    let d = dir();
    let c = Cap(&d);
    matrix(&c);
    for (name, check) in FACTS {
        eprintln!("checking {name}");
        check(&c);
    }
}

/// The facts hold on the wire today, not only in the committed files: the capture script runs
/// against the real SDK agents again (Python a2a-sdk 0.3.26 in .venv03, the JS 0.3.14 agent) into
/// a temporary directory and every check runs over what it recorded.
#[test]
fn a_fresh_capture_from_the_real_sdk_agents_shows_every_fact() {
    let js = crate::common::repo_root().join("tests/peers/js03/node_modules/@a2a-js/sdk");
    assert!(
        js.exists(),
        "the JS 0.3 agent is not installed — run `bash scripts/test.sh` once (or `npm ci` in tests/peers/js03)"
    );
    let out = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let stderr_path = logs.path().join("capture.stderr");
    let mut run = std::process::Command::new(crate::common::python_v03())
        .arg(crate::common::repo_root().join("tests/peers/v03/capture.py"))
        .arg("--out")
        .arg(out.path())
        .current_dir(crate::common::repo_root())
        // Files, not pipes: nothing here reads while it runs, and a full pipe would block it.
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    // capture.py bounds itself (RUN_DEADLINE, 240 s; a run takes seconds); this is the bound
    // should it not: killed, its JS agents then exit on their stdin's EOF.
    let Some(status) = crate::common::process::wait_exit(&mut run, CAPTURE_DEADLINE) else {
        let _ = run.kill();
        let _ = run.wait();
        panic!(
            "capture.py still running after {CAPTURE_DEADLINE:?}: killed\n{}",
            stderr()
        );
    };
    assert!(status.success(), "capture.py failed:\n{}", stderr());
    let c = Cap(out.path());
    matrix(&c);
    for (name, check) in FACTS {
        eprintln!("checking {name}");
        check(&c);
    }
}
