//! The reference agent driven by the OFFICIAL Python a2a-sdk 1.3.0 client (tests/peers/sdk_client.py):
//! card fetch, send, stream on both bindings, tenant, extension negotiation, the extended card with
//! and without the right scope, and each protocol error the agent promises.

use crate::common::ref_agent::{OTHER_TOKEN, PARTNER_TOKEN, VIEWER_TOKEN};
use crate::common::{RefAgent, sdk_client};
use serde_json::Value;

const TRACE: &str = "https://example.com/ext/trace/v1";

fn skill_ids(card: &Value) -> Vec<&str> {
    card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect()
}

fn artifact_texts(task: &Value) -> Vec<String> {
    task["artifacts"]
        .as_array()
        .map(|a| {
            a.iter()
                .flat_map(|a| a["parts"].as_array().unwrap().clone())
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn sdk_resolves_the_public_card() {
    let agent = RefAgent::sample();
    let run = sdk_client(&["--url", &agent.base_url, "--op", "card"]).ok();
    let card = &run.of_kind("card")[0]["card"];
    assert_eq!(
        skill_ids(card),
        ["echo", "lookup-invoice", "stream-report", "invoice-status"]
    );
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    assert!(
        card["version"]
            .as_str()
            .unwrap()
            .starts_with("1.4.0+skills.")
    );
    let iface = &run.of_kind("interface")[0];
    assert_eq!(iface["url"], agent.jsonrpc_url());
}

#[test]
fn sdk_send_on_both_bindings() {
    let agent = RefAgent::sample();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--text",
            "echo hello world",
        ])
        .ok();
        let task = run.last_task();
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{binding}");
        assert_eq!(artifact_texts(task), ["echo hello world"], "{binding}");
    }
}

#[test]
fn sdk_stream_on_both_bindings_gets_every_chunk_in_order() {
    let agent = RefAgent::sample();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "stream",
            "--text",
            "stream a report in 3 parts",
        ])
        .ok();
        let events = run.events();
        let kinds: Vec<String> = events
            .iter()
            .map(|e| {
                let (k, v) = e.as_object().unwrap().iter().next().unwrap();
                match k.as_str() {
                    "task" | "statusUpdate" => {
                        format!("{k}:{}", v["status"]["state"].as_str().unwrap())
                    }
                    "artifactUpdate" => format!(
                        "{k}:{}",
                        v["artifact"]["parts"][0]["text"].as_str().unwrap().trim()
                    ),
                    _ => k.clone(),
                }
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "task:TASK_STATE_SUBMITTED",
                "statusUpdate:TASK_STATE_WORKING",
                "artifactUpdate:part 1 of 3",
                "artifactUpdate:part 2 of 3",
                "artifactUpdate:part 3 of 3",
                "statusUpdate:TASK_STATE_COMPLETED"
            ],
            "{binding}"
        );
    }
}

/// A variant of the sample registry, edited by plain text replacement, in a fresh temp dir.
fn variant(edits: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let mut text = RefAgent::sample_registry_text();
    for (from, to) in edits {
        assert!(text.contains(from), "the sample registry has no {from:?}");
        text = text.replacen(from, to, 1);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = RefAgent::write_registry(dir.path(), "registry.toml", &text);
    (dir, path)
}

fn expect_error(run: &crate::common::SdkRun, code: i64, reason: &str) {
    let e = run.err();
    assert_eq!(e["code"], code, "{e}");
    assert_eq!(e["reason"], reason, "{e}");
}

#[test]
fn tenant_from_the_interface_is_checked_against_the_principal() {
    // Both interfaces advertise tenant "acme": the SDK copies it into params.tenant (JSON-RPC) and
    // the path prefix (REST).
    let (_dir, path) = variant(&[
        (
            "path = \"/a2a/jsonrpc\"\nprotocol_version = \"1.0\"",
            "path = \"/a2a/jsonrpc\"\nprotocol_version = \"1.0\"\ntenant = \"acme\"",
        ),
        (
            "path = \"/a2a/rest\"\nprotocol_version = \"1.0\"",
            "path = \"/a2a/rest\"\nprotocol_version = \"1.0\"\ntenant = \"acme\"",
        ),
    ]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--token",
            PARTNER_TOKEN,
            "--text",
            "Reconcile invoice INV-20931 against its PO.",
            "--tenant-expect",
            "acme",
        ])
        .ok();
        let check = &run.of_kind("tenant_check")[0];
        assert_eq!(check["ok"], true, "{check}");
        let task = run.last_task();
        let out = &task["artifacts"][0]["parts"][0]["data"];
        assert_eq!(out["onBehalfOf"]["tenant"], "acme", "{binding}: {task}");
        assert_eq!(out["onBehalfOf"]["principal"], "partner");
        // A principal of tenant globex may not act for acme.
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--token",
            OTHER_TOKEN,
            "--text",
            "echo hi",
        ]);
        assert_eq!(run.err()["http_status"], 403, "{binding}: {run:?}");
    }
}

#[test]
fn optional_extension_is_activated_and_echoed() {
    let agent = RefAgent::sample();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--extensions",
            &format!("{TRACE},https://unknown.example/ext/v9"),
            "--text",
            "echo traced",
        ])
        .ok();
        // the activated set (the unknown URI ignored) comes back in A2A-Extensions
        let headers = run.of_kind("response_headers");
        assert!(
            headers.iter().any(|h| h["a2a_extensions"] == TRACE),
            "{binding}: {run:?}"
        );
        // and the extension did its job: the router's explanation is on the task
        let task = run.last_task();
        let trace = &task["metadata"][TRACE];
        assert_eq!(trace["skill"], "echo", "{binding}: {task}");
        assert_eq!(trace["layer"], "classifier");
        assert_eq!(trace["explanation"]["scores"][0]["matched"][0], "echo");
        // without the header nothing is activated
        let run = sdk_client(&["--url", &agent.base_url, "--binding", binding]).ok();
        assert!(run.of_kind("response_headers").is_empty());
        assert!(run.last_task()["metadata"].get(TRACE).is_none());
    }
}

#[test]
fn required_extension_missing_is_extension_support_required() {
    let (_dir, path) = variant(&[("required = false", "required = true")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&["--url", &agent.base_url, "--binding", binding]);
        expect_error(&run, -32008, "EXTENSION_SUPPORT_REQUIRED");
        assert!(
            run.err()["message"].as_str().unwrap().contains(TRACE),
            "names the extension: {run:?}"
        );
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--extensions",
            TRACE,
        ]);
        assert_eq!(run.status, 0, "{run:?}");
    }
}

#[test]
fn extended_card_depends_on_the_principal() {
    let agent = RefAgent::sample();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "extended-card",
            "--token",
            PARTNER_TOKEN,
        ])
        .ok();
        let card = &run.of_kind("extended_card")[0]["card"];
        assert_eq!(
            skill_ids(card),
            [
                "echo",
                "lookup-invoice",
                "stream-report",
                "reconcile-invoice",
                "reconcile-invoice-v2",
                "invoice-status"
            ],
            "{binding}"
        );
        let public = &run.of_kind("card")[0]["card"];
        assert_ne!(card["version"], public["version"]);
        // authenticated but without scope recon.run: nothing beyond the public skills
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "extended-card",
            "--token",
            VIEWER_TOKEN,
        ])
        .ok();
        let card = &run.of_kind("extended_card")[0]["card"];
        assert_eq!(
            skill_ids(card),
            ["echo", "lookup-invoice", "stream-report", "invoice-status"]
        );
        // anonymous: 401
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "extended-card",
        ]);
        assert_eq!(run.err()["http_status"], 401, "{run:?}");
    }
}

#[test]
fn extended_card_errors_unsupported_and_not_configured() {
    // flag false and no extended manifests → UnsupportedOperationError
    let mut text = RefAgent::sample_registry_text();
    let cut = text
        .find("[[manifests]]\nid = \"reconcile-invoice\"")
        .unwrap();
    let end = text.find("[[manifests]]\nid = \"invoice-status\"").unwrap();
    text.replace_range(cut..end, "");
    let cut = text
        .find("[[manifests]]\nid = \"reconcile-invoice-v0\"")
        .unwrap();
    text.truncate(cut);
    let dir = tempfile::tempdir().unwrap();
    let off = RefAgent::write_registry(
        dir.path(),
        "off.toml",
        &text.replace(
            "# extended_agent_card: omitted",
            "extended_agent_card = false\n# omitted",
        ),
    );
    let on = RefAgent::write_registry(
        dir.path(),
        "on.toml",
        &text.replace(
            "# extended_agent_card: omitted",
            "extended_agent_card = true\n# omitted",
        ),
    );
    let agent = RefAgent::start(&off, &RefAgent::demo_envs());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        // The SDK client does not call GetExtendedAgentCard when the card's flag is false: it
        // returns the public card. The UnsupportedOperationError answer itself is checked with raw
        // HTTP in agent_http.rs.
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "extended-card",
            "--token",
            PARTNER_TOKEN,
        ])
        .ok();
        let ext = &run.of_kind("extended_card")[0]["card"];
        assert_eq!(ext, &run.of_kind("card")[0]["card"]);
    }
    drop(agent);
    let agent = RefAgent::start(&on, &RefAgent::demo_envs());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "extended-card",
            "--token",
            PARTNER_TOKEN,
        ]);
        expect_error(&run, -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED");
    }
}

#[test]
fn push_notification_methods_are_not_supported() {
    let agent = RefAgent::sample();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "push-config",
            "--task-id",
            "any",
        ]);
        expect_error(&run, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED");
    }
}

#[test]
fn streaming_advertised_but_refused_is_unsupported_operation() {
    let (_dir, path) = variant(&[("refuse_streaming = false", "refuse_streaming = true")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "stream",
        ]);
        let card = &run.of_kind("card")[0]["card"];
        assert_eq!(card["capabilities"]["streaming"], true);
        expect_error(&run, -32004, "UNSUPPORTED_OPERATION");
        // the unary call still works
        let run = sdk_client(&["--url", &agent.base_url, "--binding", binding]).ok();
        assert_eq!(run.last_task()["status"]["state"], "TASK_STATE_COMPLETED");
    }
}

#[test]
fn content_type_task_not_found_and_not_cancelable() {
    let agent = RefAgent::sample();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        // a JSON data part fits no public skill
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--data",
            r#"{"invoice":"INV-1"}"#,
        ]);
        expect_error(&run, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
        // ... but fits the preview skill for the partner (media-type layer)
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--token",
            PARTNER_TOKEN,
            "--data",
            r#"{"invoice":"INV-20931"}"#,
        ])
        .ok();
        let out = &run.last_task()["artifacts"][0]["parts"][0]["data"];
        assert_eq!(out["schemaVersion"], 2.0, "{out}");

        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "get-task",
            "--task-id",
            "no-such-task",
        ]);
        expect_error(&run, -32001, "TASK_NOT_FOUND");

        let done = sdk_client(&["--url", &agent.base_url, "--binding", binding]).ok();
        let id = done.last_task()["id"].as_str().unwrap().to_string();
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--op",
            "cancel",
            "--task-id",
            &id,
        ]);
        expect_error(&run, -32002, "TASK_NOT_CANCELABLE");
        // a message to the finished task
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--task-id",
            &id,
            "--text",
            "more",
        ]);
        expect_error(&run, -32004, "UNSUPPORTED_OPERATION");
    }
}

#[test]
fn cancel_get_list_and_subscribe_a_running_task() {
    let (_dir, path) = variant(&[("slow_step_ms = 200", "slow_step_ms = 2000")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let run = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--token",
            VIEWER_TOKEN,
            "--return-immediately",
            "--text",
            "stream a report in 10 parts",
        ])
        .ok();
        let id = run.last_task()["id"].as_str().unwrap().to_string();
        let common = [
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--token",
            VIEWER_TOKEN,
        ];
        let got = sdk_client(&[&common[..], &["--op", "get-task", "--task-id", &id]].concat()).ok();
        assert_eq!(got.last_task()["id"], id.as_str());
        let list = sdk_client(&[&common[..], &["--op", "list-tasks"]].concat()).ok();
        let tasks = &list.of_kind("list")[0]["response"]["tasks"];
        assert!(
            tasks
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["id"] == id.as_str()),
            "{list:?}"
        );
        // another principal does not see it
        let other = sdk_client(&[
            "--url",
            &agent.base_url,
            "--binding",
            binding,
            "--token",
            PARTNER_TOKEN,
            "--op",
            "get-task",
            "--task-id",
            &id,
        ]);
        expect_error(&other, -32001, "TASK_NOT_FOUND");
        let canceled =
            sdk_client(&[&common[..], &["--op", "cancel", "--task-id", &id]].concat()).ok();
        assert_eq!(
            canceled.last_task()["status"]["state"],
            "TASK_STATE_CANCELED"
        );
        // subscribing to a terminal task is an UnsupportedOperationError
        let sub = sdk_client(
            &[
                &common[..],
                &["--stream", "--op", "subscribe", "--task-id", &id],
            ]
            .concat(),
        );
        expect_error(&sub, -32004, "UNSUPPORTED_OPERATION");
    }
}

#[test]
fn subscribe_to_a_running_task_streams_its_remaining_events() {
    let (_dir, path) = variant(&[("slow_step_ms = 200", "slow_step_ms = 1000")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    let run = sdk_client(&[
        "--url",
        &agent.base_url,
        "--return-immediately",
        "--text",
        "stream a report in 6 parts",
    ])
    .ok();
    let id = run.last_task()["id"].as_str().unwrap().to_string();
    let sub = sdk_client(&[
        "--url",
        &agent.base_url,
        "--stream",
        "--op",
        "subscribe",
        "--task-id",
        &id,
    ])
    .ok();
    let events = sub.events();
    assert!(
        events[0].get("task").is_some(),
        "first event is the task: {sub:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sub:?}"
    );
}

#[test]
fn clarification_then_continuation_through_the_sdk() {
    let agent = RefAgent::sample();
    let run = sdk_client(&["--url", &agent.base_url, "--text", "echo the report"]).ok();
    let task = run.last_task();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let question = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(question.contains("echo (Echo)") && question.contains("stream-report"));
    let id = task["id"].as_str().unwrap();
    let ctx = task["contextId"].as_str().unwrap();
    let run = sdk_client(&[
        "--url",
        &agent.base_url,
        "--task-id",
        id,
        "--context-id",
        ctx,
        "--text",
        "echo",
    ])
    .ok();
    let task = run.last_task();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(artifact_texts(task), ["echo the report"]);
}

#[test]
fn skill_hint_and_lifecycle_through_the_sdk() {
    let agent = RefAgent::sample();
    // deprecated skill by hint: routed, and says so
    let run = sdk_client(&[
        "--url",
        &agent.base_url,
        "--skill-hint",
        "invoice-status",
        "--text",
        "INV-1001",
    ])
    .ok();
    let task = run.last_task();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(
        task["metadata"]["deprecation"]
            .as_str()
            .unwrap()
            .contains("lookup-invoice")
    );
    // removed skill by hint, for an entitled caller: rejected, naming the replacement
    let run = sdk_client(&[
        "--url",
        &agent.base_url,
        "--token",
        PARTNER_TOKEN,
        "--skill-hint",
        "reconcile-invoice-v0",
        "--text",
        "reconcile INV-1",
    ])
    .ok();
    let task = run.last_task();
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED");
    assert_eq!(task["metadata"]["replacement"], "reconcile-invoice");
    // hint to an extended skill without entitlement: ignored, routed by the classifier
    let run = sdk_client(&[
        "--url",
        &agent.base_url,
        "--token",
        VIEWER_TOKEN,
        "--skill-hint",
        "reconcile-invoice",
        "--text",
        "echo only this",
    ])
    .ok();
    assert_eq!(artifact_texts(run.last_task()), ["echo only this"]);
}
