//! Agent Cards: the wire model, strict validation, JWS signature checks and the pure compiler.
//!
//! The flow is always `validate` (bytes → [`ValidatedCard`], may read trusted key files) then
//! `compile` (pure: [`ValidatedCard`] + client capabilities → [`crate::profile::Profile`]).
//! Nothing downstream reads raw card JSON.

pub mod canonical;
pub mod signature;
