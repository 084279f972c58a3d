//! The wire captures of the official A2A 0.3 SDK agents (`tests/fixtures/wire/v03/`, recorded by
//! `tests/peers/v03/capture.py` from a2a-sdk 0.3.26 and @a2a-js/sdk 0.3.14): every file parses as
//! one exchange of the full peer × binding × exchange matrix, the README names each, and every
//! verdict the README gives is re-checked here against the files (file I/O only), so a
//! re-capture that changes a fact fails instead of leaving the README wrong.

use std::collections::BTreeSet;
use std::path::PathBuf;

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
/// Exchanges captured on HTTP+JSON only (JSON-RPC has no request without `blocking` worth
/// recording: the field lives in the same `configuration` object there).
const REST_ONLY: [&str; 1] = ["send-no-blocking-field"];

fn dir() -> PathBuf {
    crate::common::repo_root().join("tests/fixtures/wire/v03")
}

/// The capture `name` (without `.json`).
fn capture(name: &str) -> Value {
    let path = dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn response(name: &str) -> Value {
    capture(name)["response"].clone()
}

fn status(name: &str) -> u64 {
    response(name)["status"].as_u64().expect("status")
}

fn body(name: &str) -> Value {
    response(name)["body"].clone()
}

/// The SSE events of a stream capture, each its `data:` lines joined and parsed.
fn events(name: &str) -> Vec<Value> {
    let r = response(name);
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
fn data_lines(name: &str) -> Vec<usize> {
    response(name)["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_array().unwrap().len())
        .collect()
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

#[test]
fn every_capture_parses_and_the_matrix_is_complete() {
    let mut found = BTreeSet::new();
    for e in std::fs::read_dir(dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            found.insert(p.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert_eq!(found, expected_names(), "captures on disk vs the matrix");
    for name in &found {
        let c = capture(name.strip_suffix(".json").unwrap());
        let (peer, binding, ex) = (
            c["peer"].as_str().unwrap(),
            c["binding"].as_str().unwrap(),
            c["exchange"].as_str().unwrap(),
        );
        assert_eq!(&format!("{peer}-{binding}-{ex}.json"), name);
        assert!(c["request"]["method"].is_string() && c["request"]["path"].is_string());
        let r = &c["response"];
        assert!(r["status"].is_u64(), "{name}");
        assert!(r["content_type"].is_string(), "{name}");
        let kinds = ["body", "text", "events"]
            .iter()
            .filter(|k| r.get(**k).is_some())
            .count();
        assert_eq!(kinds, 1, "{name}: exactly one of body, text, events");
        if r.get("events").is_some() {
            events(name.strip_suffix(".json").unwrap());
        }
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

#[test]
fn facts_1_2_streaming_refused_python_32603_js_32004() {
    let e = body("python-jsonrpc-stream-refused");
    assert_eq!(status("python-jsonrpc-stream-refused"), 200);
    assert_eq!(e["error"]["code"], -32603, "{e}");
    let r = response("python-rest-stream-refused");
    assert_eq!(r["status"], 500, "{r}");
    assert!(
        r["content_type"]
            .as_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(r["text"], "Internal Server Error");
    let e = body("js-jsonrpc-stream-refused");
    assert_eq!(status("js-jsonrpc-stream-refused"), 200);
    assert_eq!(e["error"]["code"], -32004, "{e}");
    assert_eq!(status("js-rest-stream-refused"), 400);
    assert_eq!(body("js-rest-stream-refused")["code"], -32004);
}

#[test]
fn fact_3_rest_message_parts_are_content_artifact_parts_stay_parts() {
    for peer in PEERS {
        let t = body(&format!("{peer}-rest-send"))["task"].clone();
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
        let t = body(&format!("{peer}-jsonrpc-send"))["result"].clone();
        assert!(t["history"][0].get("parts").is_some(), "{peer}: {t}");
    }
}

#[test]
fn fact_4_rest_states_are_task_state_with_cancelled_spelt_twice_l() {
    for peer in PEERS {
        assert_eq!(
            body(&format!("{peer}-rest-cancel"))["status"]["state"],
            "TASK_STATE_CANCELLED"
        );
        assert_eq!(
            body(&format!("{peer}-rest-get"))["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        assert_eq!(
            body(&format!("{peer}-jsonrpc-cancel"))["result"]["status"]["state"],
            "canceled"
        );
    }
}

#[test]
fn fact_5_refuted_a_rest_message_result_is_message_not_msg() {
    for peer in PEERS {
        let b = body(&format!("{peer}-rest-send-message-result"));
        assert!(b.get("message").is_some(), "{peer}: {b}");
        assert!(b.get("msg").is_none(), "{peer}: {b}");
    }
}

#[test]
fn fact_6_python_rest_spreads_one_event_over_several_data_lines() {
    for name in ["python-rest-stream", "python-rest-resubscribe"] {
        let lines = data_lines(name);
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
        let lines = data_lines(name);
        assert!(
            !lines.is_empty() && lines.iter().all(|n| *n == 1),
            "{name}: {lines:?}"
        );
    }
    // Joined, each multi-line event is one StreamResponse.
    let first = &events("python-rest-stream")[0];
    assert!(first.get("task").is_some(), "{first}");
}

#[test]
fn fact_7_js_rest_status_codes_201_202_204_python_200() {
    for (ex, code) in [
        ("send", 201),
        ("push-set", 201),
        ("cancel", 202),
        ("push-delete", 204),
    ] {
        assert_eq!(status(&format!("js-rest-{ex}")), code, "js {ex}");
        if ex != "push-delete" {
            assert_eq!(status(&format!("python-rest-{ex}")), 200, "python {ex}");
        }
    }
    assert_eq!(body("js-rest-push-delete"), Value::Null);
}

#[test]
fn fact_8_python_rest_without_blocking_is_non_blocking_js_blocks() {
    assert_eq!(
        body("python-rest-send-no-blocking-field")["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert_eq!(
        body("js-rest-send-no-blocking-field")["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[test]
fn fact_9_python_rest_errors_have_no_code_js_rest_errors_do() {
    assert_eq!(status("python-rest-get-unknown-task"), 404);
    let b = body("python-rest-get-unknown-task");
    assert!(b.get("code").is_none() && b["message"].is_string(), "{b}");
    assert_eq!(status("js-rest-get-unknown-task"), 404);
    assert_eq!(body("js-rest-get-unknown-task")["code"], -32001);
}

#[test]
fn fact_10_python_rest_push_list_500_delete_405() {
    assert_eq!(status("python-rest-push-list"), 500);
    assert_eq!(status("python-rest-push-delete"), 405);
    assert_eq!(status("js-rest-push-list"), 200);
    assert!(body("js-rest-push-list")["configs"].is_array());
}

#[test]
fn facts_11_to_14_seen_on_the_way() {
    // 11: Python's delete answer has no `result` member; JS's is null.
    let p = body("python-jsonrpc-push-delete");
    assert!(p.get("result").is_none() && p.get("error").is_none(), "{p}");
    let j = body("js-jsonrpc-push-delete");
    assert_eq!(j.get("result"), Some(&Value::Null), "{j}");
    // 12: JS replays the task on resubscribe, Python only sends later updates.
    assert_eq!(
        events("js-jsonrpc-resubscribe")[0]["result"]["kind"],
        "task"
    );
    assert_eq!(
        events("python-jsonrpc-resubscribe")[0]["result"]["kind"],
        "status-update"
    );
    assert!(events("js-rest-resubscribe")[0].get("task").is_some());
    assert!(
        events("python-rest-resubscribe")[0]
            .get("statusUpdate")
            .is_some()
    );
    // 13: an unknown task: -32001 on JSON-RPC (HTTP 200), 404 on REST.
    for peer in PEERS {
        let n = format!("{peer}-jsonrpc-get-unknown-task");
        assert_eq!(
            (status(&n), body(&n)["error"]["code"].clone()),
            (200, (-32001).into())
        );
        assert_eq!(status(&format!("{peer}-rest-get-unknown-task")), 404);
    }
    // 14: the extended card is a 0.3 card on both bindings.
    for peer in PEERS {
        let c = body(&format!("{peer}-jsonrpc-extended-card"))["result"].clone();
        assert_eq!(c["protocolVersion"], "0.3.0", "{peer}: {c}");
        assert!(c["name"].as_str().unwrap().ends_with("(extended)"));
        let c = body(&format!("{peer}-rest-extended-card"));
        assert_eq!(c["protocolVersion"], "0.3.0", "{peer}: {c}");
    }
}
