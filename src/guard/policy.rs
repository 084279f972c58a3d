//! One integration's guard policy: which detectors run, what each data class's finding does, the
//! allowed origins of URL parts and the scan budget (pure, built once per config).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::detectors::{Detectors, Matcher, URL_CLASS, URL_ORIGIN};
use super::{Action, GuardError, OnUnscanned};
use crate::types::data_class::is_data_class;
use crate::types::origin::normalize_origin;

/// One integration's guard policy (see [`Policy::new`]).
#[derive(Debug, Clone)]
pub struct Policy {
    /// Their names, `url_origin` last when URL parts are checked.
    names: Vec<String>,
    /// The matcher of exactly the selected detectors: a detector this policy does not run can
    /// neither find nor hide anything.
    pub(super) matcher: Arc<Matcher>,
    action: Action,
    actions: BTreeMap<String, Action>,
    pub(super) url_origins: Option<BTreeSet<String>>,
    pub(super) budget_bytes: usize,
    pub(super) on_unscanned: OnUnscanned,
}

impl Policy {
    /// The policy running `detectors` (names; unknown → [`GuardError::UnknownDetector`]), with
    /// `action` for every finding unless `actions` overrides it for the finding's data class.
    /// `url_origins`: `None` = URL parts are not checked; `Some(list)` = a `url` part whose origin
    /// (`types::origin::origin_of_url`) is not in the list is a finding of detector `url_origin`
    /// (class `url`, action Refuse always). At most `budget_bytes` of string content are scanned
    /// per request; `on_unscanned` decides about the rest.
    pub fn new(
        all: &Detectors,
        detectors: &[String],
        action: Action,
        actions: &BTreeMap<String, Action>,
        url_origins: Option<Vec<String>>,
        budget_bytes: usize,
        on_unscanned: OnUnscanned,
    ) -> Result<Policy, GuardError> {
        let mut selected = Vec::with_capacity(detectors.len());
        for name in detectors {
            let i = all
                .index_of(name)
                .ok_or_else(|| GuardError::UnknownDetector { name: name.clone() })?;
            selected.push(i);
        }
        selected.sort_unstable();
        selected.dedup();
        if let Some(class) = actions.keys().find(|c| !is_data_class(c)) {
            return Err(GuardError::BadActionClass {
                class: class.clone(),
            });
        }
        let url_origins = match url_origins {
            None => None,
            Some(list) => Some(
                list.into_iter()
                    .map(|o| normalize_origin(&o).ok_or(GuardError::BadOrigin { origin: o }))
                    .collect::<Result<BTreeSet<_>, _>>()?,
            ),
        };
        let mut names: Vec<String> = selected
            .iter()
            .map(|&i| all.name_at(i).to_owned())
            .collect();
        if url_origins.is_some() {
            names.push(URL_ORIGIN.to_owned());
        }
        Ok(Policy {
            names,
            matcher: all.shared_matcher(&selected),
            action,
            actions: actions.clone(),
            url_origins,
            budget_bytes,
            on_unscanned,
        })
    }

    /// The names of the detectors this policy runs (table order), for `/readyz` and the planner
    /// view. `url_origin` is listed last when URL parts are checked.
    pub fn detector_names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// The action of a finding of data class `class`.
    pub fn action_for(&self, class: &str) -> Action {
        if class == URL_CLASS {
            return Action::Refuse;
        }
        self.actions.get(class).copied().unwrap_or(self.action)
    }

    /// The allowed origins of URL parts, normalised and sorted; `None`: URL parts are not checked.
    pub fn url_origins(&self) -> Option<Vec<&str>> {
        (self.url_origins.as_ref()).map(|o| o.iter().map(String::as_str).collect())
    }

    /// The scan budget, in bytes of string content per request.
    pub fn budget_bytes(&self) -> usize {
        self.budget_bytes
    }

    /// What an overrun of the budget does.
    pub fn on_unscanned(&self) -> OnUnscanned {
        self.on_unscanned
    }
}
