//! The `[log]` table: log format, level and the access log (pure validation, no I/O).
//!
//! The level is an `EnvFilter` directive (`info`, `warn,a2a_egress=debug`, …); `RUST_LOG`, when
//! set, overrides it (and is held to the same rule: [`check_directive`]), and `serve
//! --log-format` overrides `format`. Read at start only.
//!
//! A bare word in a directive is a level (`info`, or `EnvFilter`'s numeric `0`-`5`) or a target
//! that looks like one (`a2a_egress`, `a2a_egress::access`: a `_` or `::` in it), which
//! `EnvFilter` enables at every level. `EnvFilter` reads any other bare word (`warning`,
//! `verbose`) as a target name too, which enables that one (non-existent) target and silences
//! everything else, so the gateway would start and log nothing: those are refused.

use serde::Deserialize;

/// Default level: the gateway at info (one access line per call), pingora's own chatter at warn.
pub const DEFAULT_LOG_LEVEL: &str = "info";

/// The level names a directive part without `=` may be (any case): the levels `EnvFilter` knows.
pub const LOG_LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// Why a log filter directive is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectiveError {
    /// A part without `=` that is neither a level nor looks like a target (`EnvFilter` would
    /// read it as a target name and log nothing else).
    #[error(
        "{word:?} is not a log level: a bare word must be a level ({}, any case, or 0-5) or a target with `_` or `::` in it (a2a_egress, a2a_egress::access); any target takes `target=level` (e.g. \"warn,a2a_egress=debug\")",
        LOG_LEVELS.join(", ")
    )]
    NotALevel {
        /// The offending part.
        word: String,
    },
    /// `EnvFilter` does not parse it.
    #[error("not a log filter ({0})")]
    Syntax(String),
}

/// Whether a directive part without `=` is one `EnvFilter` reads as meant (pure): a level name
/// of [`LOG_LEVELS`] (any case), a numeric level `0`-`5`, or a target that looks like one (a
/// `_` or `::` in its name, before any `[span]` filter).
fn bare_word_ok(part: &str) -> bool {
    let name = part.split('[').next().unwrap_or(part);
    LOG_LEVELS.iter().any(|l| l.eq_ignore_ascii_case(part))
        || matches!(part, "0" | "1" | "2" | "3" | "4" | "5")
        || name.contains('_')
        || name.contains("::")
}

/// Checks a filter directive (`[log] level`, `RUST_LOG`): it parses as an `EnvFilter`, and every
/// comma-separated part without `=` is a level (a name or `0`-`5`) or looks like a target (a `_`
/// or `::` in it; pure).
pub fn check_directive(directive: &str) -> Result<(), DirectiveError> {
    for part in directive.split(',').map(str::trim) {
        let bare = !part.is_empty() && !part.contains('=');
        if bare && !bare_word_ok(part) {
            return Err(DirectiveError::NotALevel {
                word: part.to_owned(),
            });
        }
    }
    tracing_subscriber::EnvFilter::builder()
        .parse(directive)
        .map(drop)
        .map_err(|e| DirectiveError::Syntax(e.to_string()))
}

/// How log lines are written (to stderr).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines; colour codes only when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line (fields flattened), for log collectors.
    Json,
}

/// Whether one access line is written per data-plane call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AccessLog {
    /// One line per call at info level (target `a2a_egress::access`).
    #[default]
    On,
    /// No access lines; errors and state changes are still logged.
    Off,
}

/// `[log]` as written.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    /// `text` (default) or `json`.
    #[serde(default)]
    pub format: LogFormat,
    /// An `EnvFilter` directive (default `info`); `RUST_LOG` overrides it.
    pub level: Option<String>,
    /// `on` (default) or `off`.
    #[serde(default)]
    pub access: AccessLog,
}

/// The validated `[log]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log {
    /// Line format.
    pub format: LogFormat,
    /// The filter directive (checked to parse).
    pub level: String,
    /// The access log switch.
    pub access: AccessLog,
}

impl Default for Log {
    fn default() -> Self {
        Log {
            format: LogFormat::Text,
            level: DEFAULT_LOG_LEVEL.to_owned(),
            access: AccessLog::On,
        }
    }
}

/// Checks `[log]`; a level that is not a valid filter directive ([`check_directive`]) is a problem.
pub fn log(raw: &RawLog, problems: &mut Vec<String>) -> Log {
    let level = raw
        .level
        .clone()
        .unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_owned());
    if let Err(e) = check_directive(&level) {
        problems.push(format!("log.level: {level:?}: {e}"));
    }
    Log {
        format: raw.format,
        level,
        access: raw.access,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Log, Vec<String>) {
        let raw: RawLog = toml::from_str(text).expect("raw [log]");
        let mut problems = Vec::new();
        (log(&raw, &mut problems), problems)
    }

    #[test]
    fn defaults_are_text_info_and_access_on() {
        let (l, p) = parse("");
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(l, Log::default());
    }

    #[test]
    fn json_off_and_directives_are_accepted() {
        let (l, p) =
            parse("format = \"json\"\nlevel = \"warn,a2a_egress=debug\"\naccess = \"off\"\n");
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(l.format, LogFormat::Json);
        assert_eq!(l.access, AccessLog::Off);
        assert_eq!(l.level, "warn,a2a_egress=debug");
    }

    #[test]
    fn a_bare_word_that_is_not_a_level_or_a_target_is_refused_naming_the_forms() {
        for bad in [
            "warning",
            "verbose",
            "info,loud",
            " Warning ",
            "6",
            "loud[span]",
        ] {
            let (_, p) = parse(&format!("level = {bad:?}\n"));
            assert_eq!(p.len(), 1, "{bad}: {p:?}");
            assert!(
                p[0].contains("is not a log level")
                    && p[0].contains("trace, debug, info, warn, error, off")
                    && p[0].contains("0-5")
                    && p[0].contains("`_` or `::`"),
                "{p:?}"
            );
        }
        for good in [
            "warn",
            "WARN",
            "off",
            "0",
            "5",
            "info,3",
            "a2a_egress",
            "a2a_egress::access",
            "warn,a2a_egress",
            "a2a_egress[refresh]",
            "warn,a2a_egress=debug",
            "a2a_egress::access=off,info",
            "info,",
            "a2a_egress[refresh]=trace",
        ] {
            let (_, p) = parse(&format!("level = {good:?}\n"));
            assert!(p.is_empty(), "{good}: {p:?}");
        }
    }

    #[test]
    fn a_bad_level_is_a_problem_and_unknown_values_are_refused() {
        let (_, p) = parse("level = \"loud[\"\n");
        assert!(p.len() == 1 && p[0].starts_with("log.level: "), "{p:?}");
        assert!(toml::from_str::<RawLog>("format = \"xml\"\n").is_err());
        assert!(toml::from_str::<RawLog>("access = \"sometimes\"\n").is_err());
        assert!(toml::from_str::<RawLog>("colour = true\n").is_err());
    }
}
