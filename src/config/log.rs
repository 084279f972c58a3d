//! The `[log]` table: log format, level and the access log (pure validation, no I/O).
//!
//! The level is an `EnvFilter` directive (`info`, `warn,a2a_egress=debug`, …); `RUST_LOG`, when
//! set, overrides it, and `serve --log-format` overrides `format`. Read at start only.

use serde::Deserialize;

/// Default level: the gateway at info (one access line per call), pingora's own chatter at warn.
pub const DEFAULT_LOG_LEVEL: &str = "info";

/// How log lines are written (to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines; colour codes only when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line (fields flattened), for log collectors.
    Json,
}

/// Whether one access line is written per data-plane call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessLog {
    /// One line per call at info level (target `a2a_egress::access`).
    #[default]
    On,
    /// No access lines; errors and state changes are still logged.
    Off,
}

/// `[log]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
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

/// Checks `[log]`; a level that is not a valid filter directive is a problem.
pub fn log(raw: &RawLog, problems: &mut Vec<String>) -> Log {
    let level = raw
        .level
        .clone()
        .unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_owned());
    if let Err(e) = tracing_subscriber::EnvFilter::builder().parse(&level) {
        problems.push(format!("log.level: {level:?} is not a log filter ({e})"));
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
    fn a_bad_level_is_a_problem_and_unknown_values_are_refused() {
        let (_, p) = parse("level = \"loud[\"\n");
        assert!(p.len() == 1 && p[0].starts_with("log.level: "), "{p:?}");
        assert!(toml::from_str::<RawLog>("format = \"xml\"\n").is_err());
        assert!(toml::from_str::<RawLog>("access = \"sometimes\"\n").is_err());
        assert!(toml::from_str::<RawLog>("colour = true\n").is_err());
    }
}
