//! The reference agent driven by the OFFICIAL Python a2a-sdk 1.3.0 client (tests/peers/sdk_client.py):
//! card fetch, send, stream on both bindings, tenant, extension negotiation, the extended card with
//! and without the right scope, and each protocol error the agent promises.

mod common;

use common::{RefAgent, sdk_client};
use serde_json::Value;

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
