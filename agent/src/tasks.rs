//! Bounded in-memory task store with per-task event fan-out (no I/O).
//!
//! One `std::sync::Mutex` guards everything; it is never held across an `.await`, and every update
//! is applied and published under it, so a subscriber that snapshots a task and subscribes in one
//! call never misses or double-counts an event. Tasks are scoped by (tenant, principal): another
//! scope sees TaskNotFound, never someone else's task.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use a2a::{Message, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent};
use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, watch};

/// How many undelivered events a slow subscriber may fall behind before its stream ends.
const EVENT_BUFFER: usize = 256;
/// Messages kept per task; older ones are dropped, so a caller continuing a task forever cannot
/// grow it without bound.
pub const MAX_HISTORY: usize = 100;

fn push_bounded(history: &mut Option<Vec<Message>>, m: Message) {
    let h = history.get_or_insert_with(Vec::new);
    h.push(m);
    if h.len() > MAX_HISTORY {
        h.drain(..h.len() - MAX_HISTORY);
    }
}

/// Errors of the task store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// No task with that id in the caller's scope.
    #[error("task {0:?} not found")]
    NotFound(String),
    /// The store is full of unfinished tasks.
    #[error("task store is full ({0} unfinished tasks)")]
    Full(usize),
    /// Cancel on a task already in a terminal state.
    #[error("task {id:?} is {state:?}")]
    NotCancelable {
        /// Task id.
        id: String,
        /// Its state.
        state: TaskState,
    },
}

/// Who may see a task: the effective tenant and the principal name (`None` = anonymous).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// Effective tenant of the request that created the task.
    pub tenant: Option<String>,
    /// Principal name; `None` for anonymous callers.
    pub owner: Option<String>,
}

/// What a task is bound to, so a continuing message stays with its handler.
#[derive(Debug, Clone, PartialEq)]
pub enum Binding {
    /// Served by the capability with this id.
    Skill(String),
    /// Waiting for the caller to say which of these capabilities was meant; `original` is the
    /// message to run once it is chosen.
    Clarify {
        /// Candidate capability ids.
        candidates: Vec<String>,
        /// The message that could not be routed.
        original: Box<Message>,
    },
    /// Ended without a handler (e.g. a removed capability's router entry).
    None,
}

struct Entry {
    task: Task,
    scope: Scope,
    binding: Binding,
    tx: broadcast::Sender<StreamResponse>,
    cancel: watch::Sender<bool>,
    updated: DateTime<Utc>,
}

struct Inner {
    tasks: HashMap<String, Entry>,
    /// Creation order, for eviction.
    order: VecDeque<String>,
}

/// The bounded task store.
pub struct TaskStore {
    inner: Mutex<Inner>,
    max: usize,
}

/// A subscription: the task as it was when subscribing, and the events after that.
pub struct Subscription {
    /// Snapshot at subscription time.
    pub task: Task,
    /// Later events, in order.
    pub events: broadcast::Receiver<StreamResponse>,
}

/// Filter and page of ListTasks.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub status: Option<TaskState>,
    /// Only tasks whose status changed after this instant.
    pub status_timestamp_after: Option<DateTime<Utc>>,
    /// Offset of the page (decoded page token).
    pub offset: usize,
    /// Page size (1..=100).
    pub page_size: usize,
}

/// Whether a state ends a stream: terminal or interrupted.
pub fn is_final(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

impl TaskStore {
    /// A store keeping at most `max` tasks.
    pub fn new(max: usize) -> Self {
        TaskStore {
            inner: Mutex::new(Inner {
                tasks: HashMap::new(),
                order: VecDeque::new(),
            }),
            max: max.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Inserts a new task, evicting the oldest finished (then the oldest interrupted) task when
    /// full. Returns the cancellation signal the handler watches.
    pub fn create(
        &self,
        task: Task,
        scope: Scope,
        binding: Binding,
    ) -> Result<watch::Receiver<bool>, TaskError> {
        let mut g = self.lock();
        if g.tasks.len() >= self.max {
            let victim = g
                .order
                .iter()
                .position(|id| g.tasks[id].task.status.state.is_terminal())
                .or_else(|| {
                    g.order
                        .iter()
                        .position(|id| is_final(&g.tasks[id].task.status.state))
                });
            match victim {
                Some(i) => {
                    let id = g.order.remove(i).expect("index from position");
                    g.tasks.remove(&id);
                }
                None => return Err(TaskError::Full(g.tasks.len())),
            }
        }
        let (tx, _) = broadcast::channel(EVENT_BUFFER);
        let (cancel, cancel_rx) = watch::channel(false);
        let id = task.id.clone();
        g.order.push_back(id.clone());
        g.tasks.insert(
            id,
            Entry {
                task,
                scope,
                binding,
                tx,
                cancel,
                updated: Utc::now(),
            },
        );
        Ok(cancel_rx)
    }

    fn entry<'a>(g: &'a Inner, id: &str, scope: &Scope) -> Result<&'a Entry, TaskError> {
        g.tasks
            .get(id)
            .filter(|e| &e.scope == scope)
            .ok_or_else(|| TaskError::NotFound(id.to_string()))
    }

    /// The task, if it exists in `scope`.
    pub fn get(&self, id: &str, scope: &Scope) -> Result<Task, TaskError> {
        let g = self.lock();
        Ok(Self::entry(&g, id, scope)?.task.clone())
    }

    /// The task and what it is bound to (for a continuing message).
    pub fn binding(&self, id: &str, scope: &Scope) -> Result<(Task, Binding), TaskError> {
        let g = self.lock();
        let e = Self::entry(&g, id, scope)?;
        Ok((e.task.clone(), e.binding.clone()))
    }

    /// Rebinds a task (clarification resolved) and returns a fresh cancellation signal.
    pub fn rebind(&self, id: &str, binding: Binding) -> Option<watch::Receiver<bool>> {
        let mut g = self.lock();
        let e = g.tasks.get_mut(id)?;
        e.binding = binding;
        Some(e.cancel.subscribe())
    }

    /// Snapshot plus subscription, atomically.
    pub fn subscribe(&self, id: &str, scope: &Scope) -> Result<Subscription, TaskError> {
        let g = self.lock();
        let e = Self::entry(&g, id, scope)?;
        Ok(Subscription {
            task: e.task.clone(),
            events: e.tx.subscribe(),
        })
    }

    /// Appends a message to the task's history (a continuing user message).
    pub fn push_history(&self, id: &str, message: Message) {
        let mut g = self.lock();
        if let Some(e) = g.tasks.get_mut(id) {
            push_bounded(&mut e.task.history, message);
            e.updated = Utc::now();
        }
    }

    /// Applies an event to the task and publishes it. Events for a task already in a terminal
    /// state are dropped (a handler finishing after a cancel must not resurrect the task).
    /// Returns whether the event was applied.
    pub fn publish(&self, id: &str, event: StreamResponse) -> bool {
        let mut g = self.lock();
        let Some(e) = g.tasks.get_mut(id) else {
            return false;
        };
        if e.task.status.state.is_terminal() {
            return false;
        }
        match &event {
            StreamResponse::StatusUpdate(u) => {
                if let Some(m) = &u.status.message {
                    push_bounded(&mut e.task.history, m.clone());
                }
                e.task.status = u.status.clone();
            }
            StreamResponse::ArtifactUpdate(u) => {
                let arts = e.task.artifacts.get_or_insert_with(Vec::new);
                match arts
                    .iter_mut()
                    .find(|a| a.artifact_id == u.artifact.artifact_id)
                {
                    Some(a) if u.append == Some(true) => {
                        a.parts.extend(u.artifact.parts.iter().cloned())
                    }
                    Some(a) => *a = u.artifact.clone(),
                    None => arts.push(u.artifact.clone()),
                }
            }
            StreamResponse::Task(t) => e.task = t.clone(),
            StreamResponse::Message(m) => push_bounded(&mut e.task.history, m.clone()),
        }
        e.updated = Utc::now();
        // No receivers is fine: nobody is streaming this task.
        let _ = e.tx.send(event);
        true
    }

    /// Cancels a task that is not terminal: signals its handler, moves it to CANCELED and
    /// publishes that.
    pub fn cancel(&self, id: &str, scope: &Scope) -> Result<Task, TaskError> {
        let mut g = self.lock();
        let e = g
            .tasks
            .get_mut(id)
            .filter(|e| &e.scope == scope)
            .ok_or_else(|| TaskError::NotFound(id.to_string()))?;
        if e.task.status.state.is_terminal() {
            return Err(TaskError::NotCancelable {
                id: id.to_string(),
                state: e.task.status.state.clone(),
            });
        }
        let _ = e.cancel.send(true);
        let status = TaskStatus {
            state: TaskState::Canceled,
            message: None,
            timestamp: Some(Utc::now()),
        };
        e.task.status = status.clone();
        e.updated = Utc::now();
        let _ =
            e.tx.send(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: e.task.id.clone(),
                context_id: e.task.context_id.clone(),
                status,
                metadata: None,
            }));
        Ok(e.task.clone())
    }

    /// One page of the caller's tasks, most recently updated first, and the total count.
    pub fn list(&self, scope: &Scope, q: &ListQuery) -> (Vec<Task>, usize) {
        let g = self.lock();
        let mut hits: Vec<&Entry> = g
            .tasks
            .values()
            .filter(|e| &e.scope == scope)
            .filter(|e| {
                q.context_id
                    .as_ref()
                    .is_none_or(|c| &e.task.context_id == c)
            })
            .filter(|e| q.status.as_ref().is_none_or(|s| &e.task.status.state == s))
            .filter(|e| {
                q.status_timestamp_after
                    .is_none_or(|t| e.task.status.timestamp.is_some_and(|ts| ts > t))
            })
            .collect();
        // Newest first; the id breaks ties so pages are stable.
        hits.sort_by(|a, b| {
            b.updated
                .cmp(&a.updated)
                .then_with(|| a.task.id.cmp(&b.task.id))
        });
        let total = hits.len();
        let page = hits
            .into_iter()
            .skip(q.offset)
            .take(q.page_size)
            .map(|e| e.task.clone())
            .collect();
        (page, total)
    }

    /// Number of tasks held.
    pub fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, state: TaskState) -> Task {
        Task {
            id: id.into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        }
    }

    fn scope(owner: &str) -> Scope {
        Scope {
            tenant: Some("acme".into()),
            owner: Some(owner.into()),
        }
    }

    #[test]
    fn bound_evicts_finished_first_then_refuses() {
        let s = TaskStore::new(2);
        s.create(task("a", TaskState::Working), scope("p"), Binding::None)
            .unwrap();
        s.create(task("b", TaskState::Completed), scope("p"), Binding::None)
            .unwrap();
        s.create(task("c", TaskState::Working), scope("p"), Binding::None)
            .unwrap();
        assert!(s.get("b", &scope("p")).is_err(), "finished task evicted");
        assert!(s.get("a", &scope("p")).is_ok());
        assert_eq!(
            s.create(task("d", TaskState::Working), scope("p"), Binding::None)
                .err(),
            Some(TaskError::Full(2))
        );
    }

    #[test]
    fn scopes_isolate_tasks() {
        let s = TaskStore::new(10);
        s.create(task("a", TaskState::Working), scope("p"), Binding::None)
            .unwrap();
        assert_eq!(
            s.get("a", &scope("q")),
            Err(TaskError::NotFound("a".into()))
        );
        assert!(s.cancel("a", &scope("q")).is_err());
        assert_eq!(
            s.list(
                &scope("q"),
                &ListQuery {
                    page_size: 10,
                    ..Default::default()
                }
            )
            .1,
            0
        );
    }

    #[test]
    fn cancel_signals_and_blocks_later_events() {
        let s = TaskStore::new(10);
        let rx = s
            .create(task("a", TaskState::Working), scope("p"), Binding::None)
            .unwrap();
        let mut sub = s.subscribe("a", &scope("p")).unwrap();
        let t = s.cancel("a", &scope("p")).unwrap();
        assert_eq!(t.status.state, TaskState::Canceled);
        assert!(*rx.borrow());
        assert!(
            matches!(sub.events.try_recv(), Ok(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::Canceled)
        );
        let late = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "a".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        assert!(!s.publish("a", late));
        assert_eq!(
            s.get("a", &scope("p")).unwrap().status.state,
            TaskState::Canceled
        );
        assert!(matches!(
            s.cancel("a", &scope("p")),
            Err(TaskError::NotCancelable { .. })
        ));
    }

    #[test]
    fn history_is_bounded() {
        let s = TaskStore::new(2);
        s.create(
            task("a", TaskState::InputRequired),
            scope("p"),
            Binding::None,
        )
        .unwrap();
        for i in 0..MAX_HISTORY + 5 {
            let mut m = Message::new(a2a::Role::User, vec![a2a::Part::text(i.to_string())]);
            m.message_id = format!("m{i}");
            s.push_history("a", m);
        }
        let h = s.get("a", &scope("p")).unwrap().history.unwrap();
        assert_eq!(h.len(), MAX_HISTORY);
        assert_eq!(h[0].message_id, "m5", "the oldest are dropped");
    }

    #[test]
    fn list_pages_newest_first() {
        let s = TaskStore::new(10);
        for id in ["a", "b", "c"] {
            s.create(task(id, TaskState::Completed), scope("p"), Binding::None)
                .unwrap();
        }
        let q = ListQuery {
            page_size: 2,
            ..Default::default()
        };
        let (p1, total) = s.list(&scope("p"), &q);
        assert_eq!(total, 3);
        assert_eq!(p1.len(), 2);
        let (p2, _) = s.list(&scope("p"), &ListQuery { offset: 2, ..q });
        assert_eq!(p2.len(), 1);
        assert!(!p1.iter().any(|t| t.id == p2[0].id));
    }
}
