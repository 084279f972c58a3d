//! `SendMessage` / `SendStreamingMessage`: create or continue the task of a message, route it to a
//! skill, record what the route decided, and start the skill's handler (no network I/O; spawns the
//! handler task).

use std::collections::HashMap;

use a2a::{Message, SendMessageRequest, Task, TaskState, TaskStatus};
use chrono::Utc;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{App, Call, Started, agent_text, hint, part_media_type, state_name, task_error};
use crate::errors::A2aError;
use crate::handlers::{self, Emitter, Input, Outcome};
use crate::registry::{Manifest, Registry, State};
use crate::router::{self, Continuing, Decision, RouteError, RouteRequest};
use crate::tasks::Binding;

/// The task a message continues, with what it is bound to.
type Existing = Option<(Task, Binding)>;

/// What a routed message does to its task.
struct Plan {
    /// What the task is bound to next (a skill, a pending clarification, nothing).
    binding: Binding,
    /// A status to set at once: the clarifying question, or the rejection of a removed skill.
    immediate: Option<(TaskState, String)>,
    /// The skill to run now.
    run: Option<String>,
    /// The task's metadata (tenant, the route's explanation under each activated extension, …).
    metadata: HashMap<String, Value>,
}

/// The ids of the message's task.
struct Ids {
    task: String,
    context: String,
}

/// Creates or continues the task for a message, routes it, and starts its handler.
pub(super) fn start(app: &App, call: &Call, req: SendMessageRequest) -> Result<Started, A2aError> {
    let reg = call.registry();
    let scope = call.scope();
    let mut msg = req.message.clone();
    let existing = continued_task(app, call, &msg)?;
    let decision = decide(reg, call, &req, &existing)?;
    let ids = match &existing {
        Some((t, _)) => Ids {
            task: t.id.clone(),
            context: t.context_id.clone(),
        },
        None => Ids {
            task: a2a::new_task_id(),
            context: msg.context_id.clone().unwrap_or_else(a2a::new_context_id),
        },
    };
    msg.task_id = Some(ids.task.clone());
    msg.context_id = Some(ids.context.clone());
    let mut plan = plan(reg, call, decision, &existing, &msg);
    let manifest = bound_manifest(reg, &mut plan)?;
    // The handler runs on the original message when a clarification was just resolved.
    let parts = match &existing {
        Some((_, Binding::Clarify { original, .. })) if manifest.is_some() => {
            original.parts.clone()
        }
        _ => msg.parts.clone(),
    };
    let cancel = match &existing {
        None => create_task(app, call, &ids, msg, plan)?,
        Some(_) => continue_task(app, call, &ids, msg, plan)?,
    };
    let sub = app.store.subscribe(&ids.task, &scope).map_err(task_error)?;
    let fresh = existing.is_none();
    let runner = manifest.map(|m| spawn_handler(app, call, &ids, cancel, m, parts, fresh));
    Ok(Started {
        task_id: ids.task,
        scope,
        sub,
        runner,
    })
}

/// The task a message with a `taskId` continues: a live, interrupted task of the caller's scope,
/// in the message's context.
fn continued_task(app: &App, call: &Call, msg: &Message) -> Result<Existing, A2aError> {
    let Some(id) = &msg.task_id else {
        return Ok(None);
    };
    let (task, binding) = app.store.binding(id, &call.scope()).map_err(task_error)?;
    let state = &task.status.state;
    if state.is_terminal() {
        return Err(A2aError::UnsupportedOperation(format!(
            "task {id:?} is in terminal state {}; send a new message without taskId",
            state_name(state)
        )));
    }
    if !matches!(state, TaskState::InputRequired | TaskState::AuthRequired) {
        return Err(A2aError::UnsupportedOperation(format!(
            "task {id:?} is {}; wait for it to need input, or cancel it",
            state_name(state)
        )));
    }
    if msg
        .context_id
        .as_ref()
        .is_some_and(|c| c != &task.context_id)
    {
        return Err(A2aError::invalid(
            "message.contextId",
            "does not match the contextId of message.taskId",
        ));
    }
    Ok(Some((task, binding)))
}

/// Routes the message (a continuing one within what its task is bound to).
fn decide(
    reg: &Registry,
    call: &Call,
    req: &SendMessageRequest,
    existing: &Existing,
) -> Result<Decision, A2aError> {
    let msg = &req.message;
    let route_req = RouteRequest {
        media_types: msg.parts.iter().map(part_media_type).collect(),
        text: msg
            .parts
            .iter()
            .filter_map(|p| p.as_text())
            .collect::<Vec<_>>()
            .join("\n"),
        hint: hint(req, &reg.router.skill_hint_key),
        accepted_output_modes: req
            .configuration
            .as_ref()
            .and_then(|c| c.accepted_output_modes.clone())
            .unwrap_or_default(),
    };
    let continuing = existing.as_ref().and_then(|(_, b)| match b {
        Binding::Skill(s) => Some(Continuing::Skill(s.clone())),
        Binding::Clarify { candidates, .. } => Some(Continuing::Clarify(candidates.clone())),
        Binding::None => None,
    });
    if existing.is_some() && continuing.is_none() {
        return Err(A2aError::UnsupportedOperation(
            "this task cannot be continued".into(),
        ));
    }
    router::route(reg, call.caller.as_ref(), &route_req, continuing.as_ref()).map_err(|e| match e {
        RouteError::InputNotSupported(_) | RouteError::OutputNotSupported(_) => {
            A2aError::ContentTypeNotSupported(e.to_string())
        }
    })
}

/// What the decision does to the task, and the metadata that records it.
fn plan(
    reg: &Registry,
    call: &Call,
    decision: Decision,
    existing: &Existing,
    msg: &Message,
) -> Plan {
    let mut metadata: HashMap<String, Value> = HashMap::new();
    if let Some(t) = &call.tenant {
        metadata.insert("tenant".into(), json!(t));
    }
    let explanation = match &decision {
        Decision::Run {
            skill,
            layer,
            explanation,
        } => json!({"skill": skill, "layer": layer, "explanation": explanation}),
        Decision::Clarify {
            candidates,
            explanation,
        } => json!({"clarify": candidates, "explanation": explanation}),
        Decision::Removed { skill, replacement } => {
            json!({"removed": skill, "replacement": replacement})
        }
    };
    // Every declared extension of this agent is a data extension: when activated, the router's
    // explanation is attached under its URI.
    for uri in &call.extensions {
        metadata.insert(uri.clone(), explanation.clone());
    }
    match decision {
        Decision::Run { skill, .. } => Plan {
            binding: Binding::Skill(skill.clone()),
            immediate: None,
            run: Some(skill),
            metadata,
        },
        Decision::Clarify { candidates, .. } => {
            let names: Vec<String> = candidates
                .iter()
                .filter_map(|id| reg.manifest(id))
                .map(|m| format!("{} ({})", m.id, m.skill.name))
                .collect();
            let question = format!(
                "Which skill did you mean? Reply with one of: {}.",
                names.join(", ")
            );
            let original = match existing {
                Some((_, Binding::Clarify { original, .. })) => original.clone(),
                _ => Box::new(msg.clone()),
            };
            Plan {
                binding: Binding::Clarify {
                    candidates,
                    original,
                },
                immediate: Some((TaskState::InputRequired, question)),
                run: None,
                metadata,
            }
        }
        Decision::Removed { skill, replacement } => {
            let text = format!("Skill {skill:?} was removed; use {replacement:?} instead.");
            metadata.insert("removedSkill".into(), json!(skill));
            metadata.insert("replacement".into(), json!(replacement));
            Plan {
                binding: Binding::None,
                immediate: Some((TaskState::Rejected, text)),
                run: None,
                metadata,
            }
        }
    }
}

/// The manifest of the skill to run, noting a deprecation in the metadata; an error when the
/// skill the task was bound to left the registry.
fn bound_manifest(reg: &Registry, plan: &mut Plan) -> Result<Option<Manifest>, A2aError> {
    let Some(id) = &plan.run else {
        return Ok(None);
    };
    let m = reg.manifest(id).cloned().ok_or_else(|| {
        A2aError::UnsupportedOperation(format!(
            "skill {id:?} this task was bound to no longer exists; start a new task"
        ))
    })?;
    if m.state == State::Deprecated {
        plan.metadata.insert(
            "deprecation".into(),
            json!(format!(
                "skill {:?} is deprecated; use {:?}",
                m.id,
                m.replacement.as_deref().unwrap_or_default()
            )),
        );
    }
    Ok(Some(m))
}

/// Stores a new task for the message; returns its cancel signal.
fn create_task(
    app: &App,
    call: &Call,
    ids: &Ids,
    msg: Message,
    plan: Plan,
) -> Result<watch::Receiver<bool>, A2aError> {
    let (state, status_message) = match &plan.immediate {
        Some((s, text)) => (
            s.clone(),
            Some(agent_text(&ids.task, &ids.context, text, &call.extensions)),
        ),
        None => (TaskState::Submitted, None),
    };
    let mut history = vec![msg];
    history.extend(status_message.clone());
    let task = Task {
        id: ids.task.clone(),
        context_id: ids.context.clone(),
        status: TaskStatus {
            state,
            message: status_message,
            timestamp: Some(Utc::now()),
        },
        artifacts: None,
        history: Some(history),
        metadata: (!plan.metadata.is_empty()).then_some(plan.metadata),
    };
    app.store
        .create(task, call.scope(), plan.binding)
        .map_err(task_error)
}

/// Adds the message to its task, rebinds it and announces the next status; returns its cancel
/// signal.
fn continue_task(
    app: &App,
    call: &Call,
    ids: &Ids,
    msg: Message,
    plan: Plan,
) -> Result<watch::Receiver<bool>, A2aError> {
    app.store.push_history(&ids.task, msg);
    let rx = app
        .store
        .rebind(&ids.task, plan.binding)
        .ok_or_else(|| A2aError::TaskNotFound(ids.task.clone()))?;
    let em = Emitter::new(
        app.store.clone(),
        ids.task.clone(),
        ids.context.clone(),
        rx.clone(),
        call.extensions.clone(),
    );
    match &plan.immediate {
        Some((state, text)) => em.status(state.clone(), Some(text)),
        // Announce the work before subscribing, so the stream's first snapshot is current.
        None => em.status(TaskState::Working, None),
    }
    Ok(rx)
}

/// Runs the skill's handler on its own task, so the work finishes even if the caller disconnects.
fn spawn_handler(
    app: &App,
    call: &Call,
    ids: &Ids,
    cancel: watch::Receiver<bool>,
    m: Manifest,
    parts: Vec<a2a::Part>,
    fresh: bool,
) -> tokio::task::JoinHandle<()> {
    let mut em = Emitter::new(
        app.store.clone(),
        ids.task.clone(),
        ids.context.clone(),
        cancel,
        call.extensions.clone(),
    );
    let input = Input {
        parts,
        caller: call.caller.clone(),
        tenant: call.tenant.clone(),
        slow_step_ms: call.registry().handlers.slow_step_ms,
    };
    let note = (m.state == State::Deprecated).then(|| {
        format!(
            "Skill {:?} is deprecated; use {:?} instead.",
            m.id,
            m.replacement.as_deref().unwrap_or_default()
        )
    });
    tokio::spawn(async move {
        if fresh || note.is_some() {
            em.status(TaskState::Working, note.as_deref());
        }
        match handlers::execute(&m, &input, &mut em).await {
            Outcome::Completed => em.status(TaskState::Completed, None),
            Outcome::InputRequired(q) => em.status(TaskState::InputRequired, Some(&q)),
            Outcome::Rejected(why) => em.status(TaskState::Rejected, Some(&why)),
            Outcome::Canceled => {}
        }
    })
}
