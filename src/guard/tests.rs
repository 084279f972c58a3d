//! Tests of the guard: each evasion, the validators, budget, redaction properties.

use super::*;
