//! Tests of the binding-independent operations, against the sample registry.
use super::*;
use std::collections::HashMap;

use crate::registry::State;
use crate::registry::tests::sample;
use futures::StreamExt;
use serde_json::json;

fn app() -> (App, Arc<Snapshot>) {
    let mut reg = sample();
    reg.handlers.slow_step_ms = 0;
    let app = App::new(Snapshot::new(reg, "http://127.0.0.1:1".into()).unwrap());
    let snap = app.live.load_full();
    (app, snap)
}

fn call(snap: &Arc<Snapshot>, token: Option<&str>) -> Call {
    let caller = token.map(|t| snap.registry.principals.authenticate(t).unwrap().clone());
    Call {
        snap: snap.clone(),
        tenant: caller.as_ref().and_then(|c| c.tenant.clone()),
        caller,
        extensions: vec![],
    }
}

fn send(text: &str, task_id: Option<&str>) -> SendMessageRequest {
    let mut m = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    super::super::params::send_message(&json!({"message": m})).unwrap()
}

fn text_of(t: &Task) -> String {
    t.artifacts.as_ref().unwrap()[0]
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect()
}

#[tokio::test]
async fn echo_end_to_end() {
    let (app, snap) = app();
    let t = send_message(&app, &call(&snap, None), send("echo hello", None))
        .await
        .unwrap();
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(text_of(&t), "echo hello");
}

#[tokio::test]
async fn clarification_then_answer_runs_the_original_message() {
    let (app, snap) = app();
    let c = call(&snap, None);
    let t = send_message(&app, &c, send("echo the report", None))
        .await
        .unwrap();
    assert_eq!(t.status.state, TaskState::InputRequired);
    let q = t
        .status
        .message
        .as_ref()
        .unwrap()
        .text()
        .unwrap()
        .to_string();
    assert!(
        q.contains("echo (Echo)") && q.contains("stream-report"),
        "{q}"
    );
    let t2 = send_message(&app, &c, send("echo", Some(&t.id)))
        .await
        .unwrap();
    assert_eq!(t2.id, t.id);
    assert_eq!(t2.status.state, TaskState::Completed);
    assert_eq!(text_of(&t2), "echo the report");
    // the task is terminal now
    assert!(matches!(
        send_message(&app, &c, send("again", Some(&t.id))).await,
        Err(A2aError::UnsupportedOperation(_))
    ));
}

#[tokio::test]
async fn handler_input_required_continues_with_the_same_handler() {
    let (app, snap) = app();
    let c = call(&snap, None);
    let t = send_message(&app, &c, send("look up the invoice status", None))
        .await
        .unwrap();
    assert_eq!(t.status.state, TaskState::InputRequired);
    // "INV-7" alone would classify nowhere; the continuing task keeps its handler
    let t = send_message(&app, &c, send("INV-7", Some(&t.id)))
        .await
        .unwrap();
    assert_eq!(t.status.state, TaskState::Completed);
    let a = &t.artifacts.unwrap()[0];
    assert!(matches!(&a.parts[0].content, PartContent::Data(v) if v["invoice"] == "INV-7"));
}

#[tokio::test]
async fn other_scopes_do_not_see_the_task() {
    let (app, snap) = app();
    let t = send_message(
        &app,
        &call(&snap, Some("partner-demo-token")),
        send("echo x", None),
    )
    .await
    .unwrap();
    let req = GetTaskRequest {
        id: t.id.clone(),
        history_length: None,
        tenant: None,
    };
    assert!(get_task(&app, &call(&snap, Some("partner-demo-token")), &req).is_ok());
    assert_eq!(
        get_task(&app, &call(&snap, Some("viewer-demo-token")), &req),
        Err(A2aError::TaskNotFound(t.id.clone()))
    );
    assert!(get_task(&app, &call(&snap, None), &req).is_err());
}

#[tokio::test]
async fn stream_emits_task_then_chunks_then_completed() {
    let (app, snap) = app();
    let s = stream_message(
        &app,
        &call(&snap, None),
        send("stream a report in 3 parts", None),
    )
    .unwrap();
    let items: Vec<StreamItem> = s.into_stream().collect().await;
    let kinds: Vec<String> = items
        .iter()
        .map(|i| match i {
            StreamItem::Event(ev) => match ev.as_ref() {
                StreamResponse::Task(t) => format!("task:{}", state_name(&t.status.state)),
                StreamResponse::StatusUpdate(u) => {
                    format!("status:{}", state_name(&u.status.state))
                }
                StreamResponse::ArtifactUpdate(a) => {
                    format!("artifact:{}", a.last_chunk.unwrap_or(false))
                }
                other => format!("{other:?}"),
            },
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "task:TASK_STATE_SUBMITTED",
            "status:TASK_STATE_WORKING",
            "artifact:false",
            "artifact:false",
            "artifact:true",
            "status:TASK_STATE_COMPLETED"
        ]
    );
}

#[tokio::test]
async fn removed_skill_rejects_naming_replacement() {
    let (app, snap) = app();
    let mut req = send("reconcile INV-1", None);
    req.metadata = Some(HashMap::from([(
        "skillId".into(),
        json!("reconcile-invoice-v0"),
    )]));
    let t = send_message(&app, &call(&snap, Some("partner-demo-token")), req)
        .await
        .unwrap();
    assert_eq!(t.status.state, TaskState::Rejected);
    assert!(
        t.status
            .message
            .unwrap()
            .text()
            .unwrap()
            .contains("\"reconcile-invoice\"")
    );
}

#[test]
fn version_negotiation() {
    let (_, snap) = app();
    let iface = &snap.registry.agent.interfaces[0];
    let mut h = HeaderMap::new();
    assert_eq!(
        negotiate_version(&h, iface),
        Err(A2aError::VersionNotSupported {
            requested: "0.3".into(),
            supported: "1.0".into()
        })
    );
    h.insert("A2A-Version", "1.0".parse().unwrap());
    assert!(negotiate_version(&h, iface).is_ok());
    h.insert("a2a-version", "1.0.7".parse().unwrap());
    assert!(negotiate_version(&h, iface).is_ok(), "patch ignored");
    h.insert("a2a-version", "1.1".parse().unwrap());
    assert!(negotiate_version(&h, iface).is_err());
    // One parser for every version: a leading zero or a non-numeric patch is not 1.0.
    for not_a_version in ["01.0", "1.0.x", "1 .0"] {
        h.insert("a2a-version", not_a_version.parse().unwrap());
        assert!(negotiate_version(&h, iface).is_err(), "{not_a_version}");
    }
}

#[test]
fn extension_negotiation() {
    let (_, snap) = app();
    let mut reg = snap.registry.clone();
    let mut h = HeaderMap::new();
    assert_eq!(
        negotiate_extensions(&h, &reg).unwrap(),
        Vec::<String>::new()
    );
    h.insert(
        "A2A-Extensions",
        "https://unknown.example/x, https://example.com/ext/trace/v1"
            .parse()
            .unwrap(),
    );
    assert_eq!(
        negotiate_extensions(&h, &reg).unwrap(),
        ["https://example.com/ext/trace/v1"]
    );
    reg.extensions[0].required = true;
    assert_eq!(
        negotiate_extensions(&HeaderMap::new(), &reg),
        Err(A2aError::ExtensionSupportRequired(vec![
            "https://example.com/ext/trace/v1".into()
        ]))
    );
}

#[test]
fn tenant_resolution() {
    let (_, snap) = app();
    let p = snap
        .registry
        .principals
        .authenticate("partner-demo-token")
        .unwrap();
    assert_eq!(
        resolve_tenant(Some(p), None).unwrap().as_deref(),
        Some("acme")
    );
    assert_eq!(
        resolve_tenant(Some(p), Some("acme".into()))
            .unwrap()
            .as_deref(),
        Some("acme")
    );
    assert!(matches!(
        resolve_tenant(Some(p), Some("globex".into())),
        Err(A2aError::PermissionDenied(_))
    ));
    assert_eq!(
        resolve_tenant(None, Some("t".into())).unwrap().as_deref(),
        Some("t")
    );
}

#[test]
fn extended_card_errors() {
    let (_, snap) = app();
    assert!(matches!(
        extended_card(&call(&snap, None)),
        Err(A2aError::Unauthenticated(_))
    ));
    assert!(extended_card(&call(&snap, Some("partner-demo-token"))).is_ok());
    let mut reg = snap.registry.clone();
    reg.agent.capabilities.extended_agent_card = Some(false);
    let s2 = Arc::new(Snapshot::new(reg.clone(), "http://x".into()).unwrap());
    assert!(matches!(
        extended_card(&call(&s2, Some("partner-demo-token"))),
        Err(A2aError::UnsupportedOperation(_))
    ));
    reg.agent.capabilities.extended_agent_card = Some(true);
    reg.manifests.retain(|m| {
        m.visibility == crate::registry::Visibility::Public && m.state != State::Preview
    });
    let s3 = Arc::new(Snapshot::new(reg, "http://x".into()).unwrap());
    assert_eq!(
        extended_card(&call(&s3, Some("partner-demo-token"))).unwrap_err(),
        A2aError::ExtendedAgentCardNotConfigured
    );
}
