//! Built-in deterministic handlers (echo, invoice lookup, reconciliation v1/v2, a slow streamed
//! report) and the execution policy gate every one of them passes first (no I/O besides timers).
//!
//! Outputs depend only on the input and the caller, so tests can assert exact results. Handlers
//! report progress through an [`Emitter`], which applies each event to the task store and fans it
//! out to streaming subscribers as it is produced.

use std::sync::Arc;
use std::time::Duration;

use a2a::{
    Artifact, Message, Part, PartContent, Role, StreamResponse, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use chrono::Utc;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::project::authorize;
use super::registry::{HandlerKind, Manifest, Principal};
use super::tasks::TaskStore;

/// How a handler run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Done; artifacts were emitted.
    Completed,
    /// Needs more input; the text is the question.
    InputRequired(String),
    /// Refused (policy or limits); the text says why.
    Rejected(String),
    /// Stopped because the task was canceled.
    Canceled,
}

/// Emits a task's events: applies them to the store and publishes them to subscribers.
#[derive(Clone)]
pub struct Emitter {
    store: Arc<TaskStore>,
    task_id: String,
    context_id: String,
    cancel: watch::Receiver<bool>,
    extensions: Vec<String>,
}

impl Emitter {
    /// An emitter for one task.
    pub fn new(
        store: Arc<TaskStore>,
        task_id: String,
        context_id: String,
        cancel: watch::Receiver<bool>,
        extensions: Vec<String>,
    ) -> Self {
        Emitter {
            store,
            task_id,
            context_id,
            cancel,
            extensions,
        }
    }

    /// Publishes a status change, with an optional agent message.
    pub fn status(&self, state: TaskState, text: Option<&str>) {
        let message = text.map(|t| self.agent_message(t));
        self.store.publish(
            &self.task_id,
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                status: TaskStatus {
                    state,
                    message,
                    timestamp: Some(Utc::now()),
                },
                metadata: None,
            }),
        );
    }

    /// Publishes an artifact (or a chunk of one).
    pub fn artifact(&self, mut artifact: Artifact, append: bool, last_chunk: bool) {
        if !self.extensions.is_empty() {
            artifact.extensions = Some(self.extensions.clone());
        }
        self.store.publish(
            &self.task_id,
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                artifact,
                append: Some(append),
                last_chunk: Some(last_chunk),
                metadata: None,
            }),
        );
    }

    /// An agent message in this task's context.
    pub fn agent_message(&self, text: &str) -> Message {
        let mut m = Message::new(Role::Agent, vec![Part::text(text)]);
        m.task_id = Some(self.task_id.clone());
        m.context_id = Some(self.context_id.clone());
        if !self.extensions.is_empty() {
            m.extensions = Some(self.extensions.clone());
        }
        m
    }

    /// Whether the task was canceled.
    pub fn canceled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Sleeps, waking early on cancel; returns false if canceled.
    async fn pause(&mut self, ms: u64) -> bool {
        if ms > 0 {
            let sleep = tokio::time::sleep(Duration::from_millis(ms));
            tokio::select! {
                _ = sleep => {}
                _ = self.cancel.wait_for(|c| *c) => {}
            }
        }
        !self.canceled()
    }
}

/// What a handler gets: the message content, the caller and settings.
#[derive(Debug, Clone)]
pub struct Input {
    /// The parts of the message being served.
    pub parts: Vec<Part>,
    /// The authenticated caller (None = anonymous).
    pub caller: Option<Principal>,
    /// The effective tenant of the request.
    pub tenant: Option<String>,
    /// Delay between slow-report steps.
    pub slow_step_ms: u64,
}

impl Input {
    /// All text parts joined by newlines.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| p.as_text())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn data(&self) -> impl Iterator<Item = &Value> {
        self.parts.iter().filter_map(|p| match &p.content {
            PartContent::Data(v) => Some(v),
            _ => None,
        })
    }

    /// Bytes of content, as the limits count them.
    fn size(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match &p.content {
                PartContent::Text(t) => t.len(),
                PartContent::Raw(b) => b.len(),
                PartContent::Url(u) => u.len(),
                PartContent::Data(v) => v.to_string().len(),
            } as u64)
            .sum()
    }
}

/// Runs the capability's handler for `input`. First the execution policy (the same
/// [`authorize`] the cards are generated with) and the manifest's limits; then the handler.
pub async fn execute(m: &Manifest, input: &Input, em: &mut Emitter) -> Outcome {
    if let Err(denied) = authorize(m, input.caller.as_ref()) {
        return Outcome::Rejected(denied.to_string());
    }
    if let Some(max) = m.limits.max_parts
        && input.parts.len() > max as usize
    {
        return Outcome::Rejected(format!(
            "skill {:?} accepts at most {max} parts; got {}",
            m.id,
            input.parts.len()
        ));
    }
    if let Some(max) = m.limits.max_input_bytes
        && input.size() > max
    {
        return Outcome::Rejected(format!(
            "skill {:?} accepts at most {max} bytes of input; got {}",
            m.id,
            input.size()
        ));
    }
    match m.handler {
        HandlerKind::Echo => echo(input, em),
        HandlerKind::LookupInvoice => lookup(input, em),
        HandlerKind::ReconcileInvoice => reconcile(input, em, 1),
        HandlerKind::ReconcileInvoiceV2 => reconcile(input, em, 2),
        HandlerKind::SlowReport => slow_report(input, em).await,
    }
}

fn text_artifact(id: &str, text: &str) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        name: Some(id.into()),
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: None,
    }
}

fn json_artifact(id: &str, value: Value) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        name: Some(id.into()),
        description: None,
        parts: vec![Part::data(value).with_media_type("application/json")],
        metadata: None,
        extensions: None,
    }
}

fn echo(input: &Input, em: &Emitter) -> Outcome {
    let mut parts: Vec<Part> = input
        .parts
        .iter()
        .filter(|p| matches!(p.content, PartContent::Text(_) | PartContent::Data(_)))
        .cloned()
        .collect();
    if parts.is_empty() {
        parts.push(Part::text(""));
    }
    em.artifact(
        Artifact {
            parts,
            ..text_artifact("echo", "")
        },
        false,
        true,
    );
    Outcome::Completed
}

/// The first `INV-<digits>` in the text or in a data part's `invoice` field, uppercased.
fn invoice_number(input: &Input) -> Option<String> {
    let from_data = input
        .data()
        .filter_map(|v| v.get("invoice").and_then(Value::as_str))
        .map(str::to_string)
        .next();
    let text = from_data.unwrap_or_else(|| input.text());
    let upper = text.to_uppercase();
    let start = upper.find("INV-")?;
    let digits: String = upper[start + 4..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty()).then(|| format!("INV-{digits}"))
}

fn digit_sum(s: &str) -> u32 {
    s.chars().filter_map(|c| c.to_digit(10)).sum()
}

fn lookup(input: &Input, em: &Emitter) -> Outcome {
    let Some(inv) = invoice_number(input) else {
        return Outcome::InputRequired(
            "Which invoice? Reply with its number, e.g. INV-20931.".into(),
        );
    };
    let n: u64 = inv[4..].parse().unwrap_or(0);
    let status = ["open", "paid", "overdue"][(digit_sum(&inv) % 3) as usize];
    em.artifact(
        json_artifact(
            "invoice",
            json!({
                "invoice": inv,
                "status": status,
                "amount": {"currency": "EUR", "cents": (n % 100_000) * 125},
            }),
        ),
        false,
        true,
    );
    Outcome::Completed
}

fn reconcile(input: &Input, em: &Emitter, version: u8) -> Outcome {
    let Some(inv) = invoice_number(input) else {
        return Outcome::InputRequired(
            "Which invoice should be reconciled? Reply with its number, e.g. INV-20931.".into(),
        );
    };
    let po = format!("PO-{}", inv[4..].chars().rev().collect::<String>());
    let matched = digit_sum(&inv).is_multiple_of(2);
    let differences = if matched {
        json!([])
    } else {
        json!([{"line": 2, "field": "quantity", "invoice": 5, "purchaseOrder": 4}])
    };
    // The caller's identity goes down with the work, so a handler never acts with more rights
    // than its caller (no confused deputy).
    let on_behalf_of = json!({
        "principal": input.caller.as_ref().map(|c| c.name.as_str()),
        "tenant": input.tenant,
    });
    let out = if version == 1 {
        json!({
            "invoice": inv, "purchaseOrder": po, "matched": matched,
            "differences": differences, "onBehalfOf": on_behalf_of,
        })
    } else {
        json!({
            "schemaVersion": 2, "invoice": inv, "purchaseOrder": po,
            "summary": {"lines": 3, "matched": if matched { 3 } else { 2 }, "mismatched": if matched { 0 } else { 1 }},
            "differences": differences, "onBehalfOf": on_behalf_of,
        })
    };
    em.artifact(json_artifact("reconciliation", out), false, true);
    Outcome::Completed
}

/// Number of report parts: the first number 1..=10 in the text, else 3.
fn report_parts(text: &str) -> u32 {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse::<u32>().ok())
        .find(|n| (1..=10).contains(n))
        .unwrap_or(3)
}

async fn slow_report(input: &Input, em: &mut Emitter) -> Outcome {
    let n = report_parts(&input.text());
    for i in 1..=n {
        if !em.pause(input.slow_step_ms).await {
            return Outcome::Canceled;
        }
        em.artifact(
            text_artifact("report", &format!("part {i} of {n}\n")),
            i > 1,
            i == n,
        );
    }
    Outcome::Completed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::tests::sample;
    use crate::tasks::{Binding, Scope};
    use a2a::Task;

    fn setup(store: &Arc<TaskStore>) -> Emitter {
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        };
        let scope = Scope {
            tenant: None,
            owner: None,
        };
        let rx = store.create(task, scope, Binding::None).unwrap();
        Emitter::new(store.clone(), "t".into(), "c".into(), rx, vec![])
    }

    fn input(text: &str, caller: Option<Principal>) -> Input {
        Input {
            parts: vec![Part::text(text)],
            tenant: caller.as_ref().and_then(|c| c.tenant.clone()),
            caller,
            slow_step_ms: 0,
        }
    }

    fn artifacts(store: &TaskStore) -> Vec<Artifact> {
        store
            .get(
                "t",
                &Scope {
                    tenant: None,
                    owner: None,
                },
            )
            .unwrap()
            .artifacts
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn every_handler_rechecks_the_policy() {
        let r = sample();
        let viewer = r.principals.authenticate("viewer-demo-token").cloned();
        let store = Arc::new(TaskStore::new(4));
        let mut em = setup(&store);
        let m = r.manifest("reconcile-invoice").unwrap();
        let out = execute(m, &input("Reconcile INV-20931", viewer), &mut em).await;
        assert!(
            matches!(out, Outcome::Rejected(ref why) if why.contains("viewer")),
            "{out:?}"
        );
        assert!(artifacts(&store).is_empty(), "nothing ran");
    }

    #[tokio::test]
    async fn reconcile_is_deterministic_and_carries_the_caller() {
        let r = sample();
        let partner = r.principals.authenticate("partner-demo-token").cloned();
        let store = Arc::new(TaskStore::new(4));
        let mut em = setup(&store);
        let m = r.manifest("reconcile-invoice").unwrap();
        let out = execute(m, &input("Reconcile INV-20931 please", partner), &mut em).await;
        assert_eq!(out, Outcome::Completed);
        let a = &artifacts(&store)[0];
        let PartContent::Data(v) = &a.parts[0].content else {
            panic!()
        };
        assert_eq!(
            v,
            &json!({"invoice": "INV-20931", "purchaseOrder": "PO-13902", "matched": false,
                    "differences": [{"line": 2, "field": "quantity", "invoice": 5, "purchaseOrder": 4}],
                    "onBehalfOf": {"principal": "partner", "tenant": "acme"}})
        );
    }

    #[tokio::test]
    async fn missing_invoice_asks_for_input() {
        let r = sample();
        let store = Arc::new(TaskStore::new(4));
        let mut em = setup(&store);
        let out = execute(
            r.manifest("lookup-invoice").unwrap(),
            &input("status?", None),
            &mut em,
        )
        .await;
        assert!(matches!(out, Outcome::InputRequired(_)));
    }

    #[tokio::test]
    async fn slow_report_streams_chunks() {
        let r = sample();
        let store = Arc::new(TaskStore::new(4));
        let mut em = setup(&store);
        let out = execute(
            r.manifest("stream-report").unwrap(),
            &input("4 parts", None),
            &mut em,
        )
        .await;
        assert_eq!(out, Outcome::Completed);
        let a = &artifacts(&store)[0];
        let texts: Vec<&str> = a.parts.iter().filter_map(|p| p.as_text()).collect();
        assert_eq!(
            texts,
            [
                "part 1 of 4\n",
                "part 2 of 4\n",
                "part 3 of 4\n",
                "part 4 of 4\n"
            ]
        );
    }

    #[tokio::test]
    async fn limits_are_enforced() {
        let r = sample();
        let store = Arc::new(TaskStore::new(4));
        let mut em = setup(&store);
        let big = "x".repeat(70_000);
        let out = execute(r.manifest("echo").unwrap(), &input(&big, None), &mut em).await;
        assert!(
            matches!(out, Outcome::Rejected(ref w) if w.contains("65536")),
            "{out:?}"
        );
    }
}
