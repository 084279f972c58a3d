//! What a verdict against the lockfile does to requests: a blocked integration serves only its
//! running tasks; a falling-back one sends new delegations to a fallback that satisfies the lock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use serde_json::{Value, json};

use super::*;
use crate::config::Config;
use crate::profile::{Profile, SkillProfile};
use crate::proxy::body::parse_jsonrpc;
use crate::state::LockVerdict;

const CONFIG: &str = r#"
[client]
allow_plain_http = true
[[integrations]]
name = "main"
card = "http://127.0.0.1:9/.well-known/agent-card.json"
origins = ["http://127.0.0.1:9"]
skills = ["echo"]
data_classes = ["internal"]
ON_BREAKING
[[integrations]]
name = "spare"
card = "http://127.0.0.1:8/.well-known/agent-card.json"
origins = ["http://127.0.0.1:8"]
skills = ["echo"]
data_classes = ["internal"]
"#;

fn profile(port: u16, output: &str) -> Profile {
    let mut p = crate::lock::diff::tests::pricing_profile();
    let iface = p.interface.as_mut().unwrap();
    iface.url = format!("http://127.0.0.1:{port}/jsonrpc");
    p.skills = [(
        "echo".to_string(),
        SkillProfile::builder().output(&[output]).build(),
    )]
    .into();
    p
}

/// `main` (pinned to text/plain output) with `main_output`, and `spare` with `spare_output`.
fn snapshot(on_breaking: &str, main_output: &str, spare_output: &str) -> Snapshot {
    let text = CONFIG.replace("ON_BREAKING", on_breaking);
    let c = Config::parse(&text, std::path::Path::new("g.toml")).unwrap();
    let build = |i: usize, port: u16, output: &str| {
        crate::state::IntegrationState::for_tests(c.integrations[i].clone(), profile(port, output))
    };
    let pinned = crate::lock::pin(
        &crate::state::manifest_of(&c.integrations[0]),
        &profile(9, "text/plain"),
        chrono::Utc::now(),
        BTreeMap::new(),
    )
    .unwrap()
    .lock;
    let main = build(0, 9, main_output).with_lock(Ok(Some(pinned)), SystemTime::now());
    let spare = build(1, 8, spare_output);
    Snapshot::default().with(main).with(spare)
}

fn rpc(method: &str, params: Value) -> RpcRequest {
    parse_jsonrpc(&Bytes::from(
        json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}).to_string(),
    ))
    .unwrap()
}

static RPC: Route = Route::JsonRpc {
    name: String::new(),
};
static NO_CLASS: DataClasses = DataClasses::Named(Vec::new());

fn facts<'a>(r: &'a RpcRequest) -> Facts<'a> {
    Facts {
        route: &RPC,
        http_method: "POST",
        query: None,
        data_class: &NO_CLASS,
        a2a_version: None,
        rpc: Some(r),
        rest_body: None,
        default_data_class: "internal",
        body: &r.body()[..],
        request_id: "r-1",
    }
}

fn send() -> RpcRequest {
    rpc(
        "SendMessage",
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
    )
}

#[test]
fn blocked_serves_running_tasks_and_refuses_new_delegations() {
    let snap = snapshot("", "text/csv", "text/plain");
    let main = snap.get("main").unwrap();
    assert_eq!(main.lock.verdict, LockVerdict::Breaking);
    assert!(matches!(main.status, Status::Blocked { .. }));
    assert_eq!(check_admission(main), Ok(()));
    assert_eq!(check_status(main), Err(Deny::IntegrationBlocked));
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let r = rpc(method, json!({"id": "t-1"}));
        let plan = decide(main, &facts(&r)).unwrap_or_else(|d| panic!("{method}: {d:?}"));
        assert_eq!(plan.method, method_of(&facts(&r)));
    }
    for method in ["SendMessage", "SendStreamingMessage", "ListTasks"] {
        let r = rpc(
            method,
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
        );
        assert_eq!(
            decide(main, &facts(&r)),
            Err(Deny::IntegrationBlocked),
            "{method}"
        );
    }
    // No fallback configured: the state decides for itself.
    let routed = lock_route(&snap, main, Method::SendMessage).unwrap();
    assert!(Arc::ptr_eq(&routed, main));
}

#[test]
fn fallback_takes_new_sends_only_while_it_satisfies_the_lock() {
    let snap = snapshot("on_breaking = \"fallback:spare\"", "text/csv", "text/plain");
    let main = snap.get("main").unwrap();
    assert!(main.status.is_usable());
    assert_eq!(main.lock.fallback.as_deref(), Some("spare"));
    let routed = lock_route(&snap, main, Method::SendMessage).unwrap();
    assert_eq!(routed.integration.name, "spare");
    let plan = decide(&routed, &facts(&send())).unwrap();
    assert_eq!(plan.method, Method::SendMessage);
    assert_eq!(
        routed.upstream().unwrap().addr.port(),
        8,
        "the fallback's upstream"
    );
    // Task calls stay with the agent that holds the tasks.
    let own = lock_route(&snap, main, Method::GetTask).unwrap();
    assert_eq!(own.integration.name, "main");

    // A fallback that breaks the lock too: the send is refused as blocked.
    let snap = snapshot("on_breaking = \"fallback:spare\"", "text/csv", "text/csv");
    let main = snap.get("main").unwrap();
    assert_eq!(
        lock_route(&snap, main, Method::SendStreamingMessage).unwrap_err(),
        Deny::IntegrationBlocked
    );
}

#[test]
fn warn_and_compatible_change_nothing() {
    let snap = snapshot("on_breaking = \"warn\"", "text/csv", "text/plain");
    let main = snap.get("main").unwrap();
    assert_eq!(main.lock.verdict, LockVerdict::Breaking);
    assert_eq!(
        decide(main, &facts(&send())).unwrap().method,
        Method::SendMessage
    );
    let snap = snapshot("", "text/plain", "text/plain");
    let main = snap.get("main").unwrap();
    assert_eq!(main.lock.verdict, LockVerdict::Compatible);
    assert!(decide(main, &facts(&send())).is_ok());
}
