//! The A2A operations, independent of the binding (no network I/O; spawns handler tasks).
//!
//! Both bindings call the same functions here with an admitted [`Call`] (version and extensions
//! negotiated, caller authenticated, tenant resolved), so JSON-RPC and HTTP+JSON cannot drift.

use std::sync::Arc;

use a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, Message, Part,
    PartContent, Role, SendMessageRequest, StreamResponse, Task, TaskState,
};
use arc_swap::ArcSwap;
use futures::Stream;
use http::HeaderMap;
use serde_json::Value;
use tokio::sync::broadcast;

use super::errors::A2aError;
use super::project::{self, ProjectedCard};
use super::registry::{Interface, Principal, Registry};
use super::tasks::{ListQuery, Scope, Subscription, TaskError, TaskStore, is_final};
use a2a_egress::types::ProtocolVersion;

/// Everything one request reads: the registry and the cards generated from it, swapped whole on reload.
#[derive(Debug)]
pub struct Snapshot {
    /// The validated registry.
    pub registry: Registry,
    /// Base URL the interface URLs are built on (no trailing slash).
    pub base_url: String,
    /// The public card, pre-serialised with its ETag.
    pub public: ProjectedCard,
}

impl Snapshot {
    /// Builds the snapshot (generates the public card).
    pub fn new(registry: Registry, base_url: String) -> Result<Self, project::ProjectError> {
        let public = project::public_card(&registry, &base_url)?;
        Ok(Snapshot {
            registry,
            base_url,
            public,
        })
    }
}

/// Shared agent state.
pub struct App {
    /// The live snapshot; load once per request.
    pub live: ArcSwap<Snapshot>,
    /// All tasks.
    pub store: Arc<TaskStore>,
}

impl App {
    /// State around a first snapshot; the task bound is fixed for the process lifetime.
    pub fn new(snapshot: Snapshot) -> Self {
        let max = snapshot.registry.agent.max_tasks;
        App {
            live: ArcSwap::from_pointee(snapshot),
            store: Arc::new(TaskStore::new(max)),
        }
    }
}

/// An admitted request.
#[derive(Debug, Clone)]
pub struct Call {
    /// The snapshot loaded for this request.
    pub snap: Arc<Snapshot>,
    /// The authenticated principal (None = anonymous).
    pub caller: Option<Principal>,
    /// The effective tenant.
    pub tenant: Option<String>,
    /// Extensions activated for this request, in declaration order.
    pub extensions: Vec<String>,
}

impl Call {
    fn scope(&self) -> Scope {
        Scope {
            tenant: self.tenant.clone(),
            owner: self.caller.as_ref().map(|c| c.name.clone()),
        }
    }

    fn registry(&self) -> &Registry {
        &self.snap.registry
    }
}

// === admission ===

/// `A2A-Version` negotiation (A2A specification, "Protocol Versioning"): absent or empty means
/// 0.3; a patch number is ignored; the Major.Minor must be the interface's. A value that is not
/// a version (`01.0`, `1.0.x`) is not supported either.
pub fn negotiate_version(headers: &HeaderMap, iface: &Interface) -> Result<(), A2aError> {
    let raw = headers
        .get(a2a::SVC_PARAM_VERSION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("0.3");
    match (
        ProtocolVersion::from_header(raw),
        ProtocolVersion::parse(&iface.protocol_version),
    ) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        _ => Err(A2aError::VersionNotSupported {
            requested: raw.to_string(),
            supported: iface.protocol_version.clone(),
        }),
    }
}

/// `A2A-Extensions` negotiation (A2A specification §3.3.4: the server fails a call that does not
/// activate a required extension): a required extension that was not requested fails the
/// call, naming it; unknown URIs are ignored; returns the activated set, in declaration order.
pub fn negotiate_extensions(headers: &HeaderMap, reg: &Registry) -> Result<Vec<String>, A2aError> {
    let requested: Vec<&str> = headers
        .get_all(a2a::SVC_PARAM_EXTENSIONS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect();
    let missing: Vec<String> = reg
        .extensions
        .iter()
        .filter(|e| e.required && !requested.contains(&e.uri.as_str()))
        .map(|e| e.uri.clone())
        .collect();
    if !missing.is_empty() && !reg.misbehave.ignore_required_extensions {
        return Err(A2aError::ExtensionSupportRequired(missing));
    }
    Ok(reg
        .extensions
        .iter()
        .filter(|e| requested.contains(&e.uri.as_str()))
        .map(|e| e.uri.clone())
        .collect())
}

/// Bearer authentication against the registry's principals.
pub fn authenticate(headers: &HeaderMap, reg: &Registry) -> Result<Option<Principal>, A2aError> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return if reg.agent.allow_anonymous {
            Ok(None)
        } else {
            Err(A2aError::Unauthenticated(
                "this agent requires a bearer token".into(),
            ))
        };
    };
    let value = value
        .to_str()
        .map_err(|_| A2aError::Unauthenticated("malformed Authorization header".into()))?;
    let token = match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
        _ => {
            return Err(A2aError::Unauthenticated(
                "Authorization must use the Bearer scheme".into(),
            ));
        }
    };
    reg.principals
        .authenticate(token)
        .cloned()
        .map(Some)
        .ok_or_else(|| A2aError::Unauthenticated("invalid bearer token".into()))
}

/// The effective tenant: the requested one (params or REST path), which a principal bound to a
/// tenant may not leave; otherwise the principal's.
pub fn resolve_tenant(
    caller: Option<&Principal>,
    requested: Option<String>,
) -> Result<Option<String>, A2aError> {
    match (requested, caller.and_then(|c| c.tenant.clone())) {
        (Some(t), Some(own)) if t != own => Err(A2aError::PermissionDenied(format!(
            "principal {:?} may not act for tenant {t:?}",
            caller.map(|c| c.name.as_str()).unwrap_or_default()
        ))),
        (Some(t), _) => Ok(Some(t)),
        (None, own) => Ok(own),
    }
}

// === operations ===

/// The events of one streamed task: a snapshot first, then live updates until a final state.
pub struct EventStream {
    first: StreamResponse,
    rx: Option<broadcast::Receiver<StreamResponse>>,
}

/// One item of an event stream.
#[derive(Debug, Clone)]
pub enum StreamItem {
    /// A protocol event (boxed: events are large, errors small).
    Event(Box<StreamResponse>),
    /// An error after the stream started (sent as `event: error`).
    Error(A2aError),
}

impl EventStream {
    fn from_subscription(sub: Subscription, history_length: Option<i32>) -> Self {
        let done = is_final(&sub.task.status.state);
        EventStream {
            first: StreamResponse::Task(trim_history(sub.task, history_length)),
            rx: (!done).then_some(sub.events),
        }
    }

    /// As a stream; it ends after a terminal or interrupted status.
    pub fn into_stream(self) -> impl Stream<Item = StreamItem> + Send + 'static {
        futures::stream::unfold(
            (Some(self.first), self.rx, false),
            |(first, mut rx, done)| async move {
                if let Some(ev) = first {
                    return Some((StreamItem::Event(Box::new(ev)), (None, rx, false)));
                }
                if done {
                    return None;
                }
                let r = rx.as_mut()?;
                match r.recv().await {
                    Ok(ev) => {
                        let end = matches!(&ev, StreamResponse::StatusUpdate(u) if is_final(&u.status.state))
                            || matches!(&ev, StreamResponse::Task(t) if is_final(&t.status.state));
                        Some((StreamItem::Event(Box::new(ev)), (None, rx, end)))
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => Some((
                        StreamItem::Error(A2aError::Internal(format!(
                            "stream fell {n} events behind; resubscribe with SubscribeToTask"
                        ))),
                        (None, rx, true),
                    )),
                    Err(broadcast::error::RecvError::Closed) => None,
                }
            },
        )
    }
}

struct Started {
    task_id: String,
    scope: Scope,
    sub: Subscription,
    runner: Option<tokio::task::JoinHandle<()>>,
}

fn part_media_type(p: &Part) -> String {
    p.media_type.clone().unwrap_or_else(|| {
        match p.content {
            PartContent::Text(_) => "text/plain",
            PartContent::Data(_) => "application/json",
            PartContent::Raw(_) | PartContent::Url(_) => "application/octet-stream",
        }
        .to_string()
    })
}

fn hint(req: &SendMessageRequest, key: &str) -> Option<String> {
    [req.metadata.as_ref(), req.message.metadata.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|m| m.get(key).and_then(Value::as_str).map(str::to_string))
}

fn state_name(s: &TaskState) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn agent_text(task_id: &str, context_id: &str, text: &str, extensions: &[String]) -> Message {
    let mut m = Message::new(Role::Agent, vec![Part::text(text)]);
    m.task_id = Some(task_id.into());
    m.context_id = Some(context_id.into());
    if !extensions.is_empty() {
        m.extensions = Some(extensions.to_vec());
    }
    m
}

fn task_error(e: TaskError) -> A2aError {
    match e {
        TaskError::NotFound(id) => A2aError::TaskNotFound(id),
        TaskError::Full(n) => A2aError::Internal(format!(
            "the agent holds {n} unfinished tasks (its limit); retry later"
        )),
        TaskError::NotCancelable { id, state } => A2aError::TaskNotCancelable {
            id,
            state: state_name(&state),
        },
    }
}

fn trim_history(mut t: Task, history_length: Option<i32>) -> Task {
    if let (Some(n), Some(h)) = (history_length, t.history.as_mut()) {
        let n = n.max(0) as usize;
        if h.len() > n {
            h.drain(..h.len() - n);
        }
    }
    if t.history.as_ref().is_some_and(Vec::is_empty) {
        t.history = None;
    }
    t
}

/// SendMessage: blocks until the task is terminal or interrupted, unless `returnImmediately`.
pub async fn send_message(
    app: &App,
    call: &Call,
    req: SendMessageRequest,
) -> Result<Task, A2aError> {
    // (historyLength, returnImmediately)
    let cfg = req.configuration.as_ref().map_or((None, false), |c| {
        (c.history_length, c.return_immediately.unwrap_or(false))
    });
    let started = send::start(app, call, req)?;
    if !cfg.1
        && let Some(r) = started.runner
    {
        r.await
            .map_err(|e| A2aError::Internal(format!("handler failed: {e}")))?;
    }
    let task = app
        .store
        .get(&started.task_id, &started.scope)
        .map_err(task_error)?;
    Ok(trim_history(task, cfg.0))
}

fn check_streaming(reg: &Registry) -> Result<(), A2aError> {
    if !reg.agent.capabilities.streaming || reg.misbehave.refuse_streaming {
        // Same text as the Python SDK, so clients that match on it behave the same.
        return Err(A2aError::UnsupportedOperation(
            "Streaming is not supported by the agent".into(),
        ));
    }
    Ok(())
}

/// SendStreamingMessage: the task's events, flushed as produced.
pub fn stream_message(
    app: &App,
    call: &Call,
    req: SendMessageRequest,
) -> Result<EventStream, A2aError> {
    check_streaming(call.registry())?;
    let history_length = req.configuration.as_ref().and_then(|c| c.history_length);
    let started = send::start(app, call, req)?;
    Ok(EventStream::from_subscription(started.sub, history_length))
}

/// SubscribeToTask: the current task, then its events.
pub fn subscribe(app: &App, call: &Call, id: &str) -> Result<EventStream, A2aError> {
    check_streaming(call.registry())?;
    let sub = app.store.subscribe(id, &call.scope()).map_err(task_error)?;
    if sub.task.status.state.is_terminal() {
        return Err(A2aError::UnsupportedOperation(format!(
            "task {id:?} is in terminal state {}; nothing to subscribe to",
            state_name(&sub.task.status.state)
        )));
    }
    Ok(EventStream::from_subscription(sub, None))
}

/// GetTask.
pub fn get_task(app: &App, call: &Call, req: &GetTaskRequest) -> Result<Task, A2aError> {
    let t = app.store.get(&req.id, &call.scope()).map_err(task_error)?;
    Ok(trim_history(t, req.history_length))
}

/// CancelTask.
pub fn cancel_task(app: &App, call: &Call, req: &CancelTaskRequest) -> Result<Task, A2aError> {
    app.store.cancel(&req.id, &call.scope()).map_err(task_error)
}

/// ListTasks: the caller's tasks, newest first. The page token is an opaque offset.
pub fn list_tasks(
    app: &App,
    call: &Call,
    req: &ListTasksRequest,
) -> Result<ListTasksResponse, A2aError> {
    let offset = match req.page_token.as_deref() {
        None | Some("") => 0,
        Some(t) => t
            .strip_prefix("o")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| A2aError::invalid("pageToken", "is not a token this agent issued"))?,
    };
    let page_size = req.page_size.unwrap_or(50) as usize;
    let q = ListQuery {
        context_id: req.context_id.clone(),
        status: req.status.clone(),
        status_timestamp_after: req.status_timestamp_after,
        offset,
        page_size,
    };
    let (tasks, total) = app.store.list(&call.scope(), &q);
    let next = offset + tasks.len();
    let include_artifacts = req.include_artifacts.unwrap_or(false);
    let tasks = tasks
        .into_iter()
        .map(|mut t| {
            if !include_artifacts {
                t.artifacts = None;
            }
            trim_history(t, req.history_length)
        })
        .collect();
    Ok(ListTasksResponse {
        tasks,
        next_page_token: if next < total {
            format!("o{next}")
        } else {
            String::new()
        },
        page_size: page_size as i32,
        total_size: total as i32,
    })
}

/// GetExtendedAgentCard (A2A specification §3.1.11, §13.3): unsupported when the flag is off, not configured when no
/// extended content exists, and only for an authenticated principal.
pub fn extended_card(call: &Call) -> Result<ProjectedCard, A2aError> {
    let reg = call.registry();
    if !reg.extended_card_flag() {
        return Err(A2aError::UnsupportedOperation(
            "this agent does not offer an extended agent card (capabilities.extendedAgentCard is false)"
                .into(),
        ));
    }
    let Some(caller) = &call.caller else {
        return Err(A2aError::Unauthenticated(
            "GetExtendedAgentCard requires a bearer token".into(),
        ));
    };
    if !reg.has_extended_content() {
        return Err(A2aError::ExtendedAgentCardNotConfigured);
    }
    project::extended_card(reg, &call.snap.base_url, caller)
        .map_err(|e| A2aError::Internal(e.to_string()))
}

mod send;
#[cfg(test)]
mod tests;
