//! `a2a-egress guard test FILE --integration NAME [--config F]`: what the integration's content
//! guard would do to a request body, for teams testing their policies in CI (file I/O; no
//! network, no secrets needed: the config is read as `config check` reads it).
//!
//! The body is parsed by the data plane's own parser (a JSON-RPC request when it is one, else an
//! HTTP+JSON SendMessage body) and decided by the data plane's own function
//! ([`crate::proxy::policy::screen_content`]), so the answer is the gateway's. stdout: one JSON
//! report (`decision`, every finding's detector, class, JSON path and action, the refusal, the
//! redacted body); never the matched text. Exit 0 allow (forwarded unchanged, findings only
//! recorded), 3 redact, 4 refuse, 64 bad config, unknown integration or one without a guard, 65 a
//! body the gateway would refuse before the guard (not JSON, a duplicate key, over the body cap),
//! 66 a file that cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

use bytes::Bytes;
use serde_json::{Value, json};

use super::{DEFAULT_CONFIG, EXIT_INVALID, EXIT_NOINPUT, EXIT_USAGE};
use crate::config::{Config, Integration};
use crate::guard::{self, Shape};
use crate::proxy::body::{parse_jsonrpc, parse_rest_body};
use crate::proxy::policy::screen_content;

/// Exit code: the request would be forwarded with matches redacted.
pub const EXIT_REDACT: u8 = 3;
/// Exit code: the request would be refused.
pub const EXIT_REFUSE: u8 = 4;

/// Arguments of `a2a-egress guard`.
#[derive(Debug, clap::Args)]
pub struct GuardArgs {
    #[command(subcommand)]
    command: GuardCommand,
}

#[derive(Debug, clap::Subcommand)]
enum GuardCommand {
    /// Prints what an integration's content guard would do to a request body (JSON report on
    /// stdout).
    ///
    /// Exit 0 allow, 3 redact, 4 refuse, 64 bad config or integration, 65 a body the gateway
    /// refuses before scanning it, 66 a file that cannot be read.
    Test {
        /// The request body: a JSON-RPC SendMessage/SendStreamingMessage request or an
        /// HTTP+JSON SendMessage body; `-` for stdin.
        file: String,
        /// The integration whose guard decides.
        #[arg(long, short = 'i')]
        integration: String,
        /// Config file [default: config/gateway.toml].
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
    },
}

/// Runs `guard test`.
pub fn run(a: GuardArgs) -> anyhow::Result<ExitCode> {
    let GuardCommand::Test {
        file,
        integration,
        config,
    } = a.command;
    let path = config.unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
    let config = match Config::load_offline(&path) {
        Ok((c, _notes)) => c,
        Err(e) => return Ok(super::config_refused(&e)),
    };
    let Some(i) = config.integrations.iter().find(|i| i.name == integration) else {
        eprintln!("{}: no integration named {integration:?}", path.display());
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    if i.guard.is_none() {
        eprintln!(
            "{}: integration {integration:?} has no guard (add guard = {{ detectors = [...], action = \"refuse\" }})",
            path.display()
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let body = match read_body(&file, i.max_body_bytes) {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    let (report, code) = match test(i, &body) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("{file}: {why}");
            return Ok(ExitCode::from(EXIT_INVALID));
        }
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(ExitCode::from(code))
}

/// The body, read with the integration's body cap (the gateway refuses a larger one unread).
fn read_body(file: &str, cap: usize) -> Result<Bytes, ExitCode> {
    let too_large = || {
        (
            format!(
                "the body is larger than the integration's max_body_bytes ({cap}): the gateway \
                 refuses it with BODY_TOO_LARGE before scanning it"
            ),
            EXIT_INVALID,
        )
    };
    let read = if file == "-" {
        crate::card::wire::read_bounded(std::io::stdin().lock(), cap)
            .map_err(|e| (format!("reading stdin: {e}"), EXIT_NOINPUT))
            .and_then(|b| {
                if b.len() > cap {
                    Err(too_large())
                } else {
                    Ok(b)
                }
            })
    } else {
        crate::types::file::read_capped(std::path::Path::new(file), cap as u64, "request body")
            .map_err(|e| match e {
                crate::types::file::FileError::TooLarge { .. } => too_large(),
                e => (e.to_string(), EXIT_NOINPUT),
            })
    };
    read.map(Bytes::from).map_err(|(why, code)| {
        eprintln!("{file}: {why}");
        ExitCode::from(code)
    })
}

/// The report and exit code for `body` under `i`'s guard, or why the body is not a request the
/// guard would see.
fn test(i: &Integration, body: &Bytes) -> Result<(Value, u8), String> {
    let g = i.guard.as_ref().ok_or("the integration has no guard")?;
    let shape = match parse_jsonrpc(body) {
        Ok(rpc) if rpc.method.sends_message() => Shape::JsonRpc,
        Ok(rpc) => {
            return Err(format!(
                "{} is not a message send: the guard scans SendMessage and SendStreamingMessage",
                rpc.method.as_str()
            ));
        }
        Err(rpc_err) => match parse_rest_body(body, true) {
            Ok(_) => Shape::Rest,
            Err(e) => {
                return Err(format!(
                    "neither a JSON-RPC request ({}) nor an HTTP+JSON SendMessage body ({e})",
                    rpc_err.error
                ));
            }
        },
    };
    let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8")?;
    let verdict = guard::scan_request(g.all(), g.policy(), text, shape);
    let findings: Vec<Value> = (verdict.findings.iter())
        .map(|f| {
            json!({"detector": f.detector, "class": f.class, "path": f.path,
                "action": f.action.as_str()})
        })
        .collect();
    let mut report = json!({
        "integration": i.name,
        "binding": match shape { Shape::JsonRpc => "JSONRPC", Shape::Rest => "HTTP+JSON" },
        "findings": findings,
        "unscanned_bytes": verdict.unscanned_bytes,
    });
    let code = match screen_content(g, shape, body, &i.data_classes) {
        Err(d) => {
            let r = d.render(&crate::proxy::deny::Shape::Rest, Some(&i.name));
            report["decision"] = "refuse".into();
            report["refusal"] = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            EXIT_REFUSE
        }
        Ok(s) => match s.redacted {
            Some(redacted) => {
                report["decision"] = "redact".into();
                report["redacted_body"] = redacted.into();
                EXIT_REDACT
            }
            None => {
                report["decision"] = "allow".into();
                0
            }
        },
    };
    Ok((report, code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{GuardContext, IntegrationGuard};
    use crate::guard::Action;

    fn integration(action: Action) -> Integration {
        let g = IntegrationGuard::compile(
            &GuardContext::builtin(),
            &["pci".into(), "email".into()],
            action,
            Default::default(),
            None,
        )
        .unwrap();
        Integration::builder("x")
            .data_classes(&["internal", "pii"])
            .guard(Some(g))
            .build()
    }

    fn send(text: &str) -> Bytes {
        Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
                {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}}})
            .to_string(),
        )
    }

    #[test]
    fn each_decision_has_its_exit_code_and_no_report_holds_the_match() {
        let card = "card 4111 1111 1111 1111 ok";
        let (r, code) = test(&integration(Action::Refuse), &send(card)).unwrap();
        assert_eq!(
            (code, r["decision"].as_str()),
            (EXIT_REFUSE, Some("refuse"))
        );
        assert_eq!(
            r["refusal"]["error"]["details"][0]["reason"], "DATA_DETECTED",
            "{r}"
        );
        assert!(!r.to_string().contains("4111"), "{r}");
        let (r, code) = test(&integration(Action::Redact), &send(card)).unwrap();
        assert_eq!(code, EXIT_REDACT);
        assert!(
            r["redacted_body"]
                .as_str()
                .unwrap()
                .contains("[REDACTED:pci]"),
            "{r}"
        );
        let (r, code) = test(&integration(Action::Record), &send("hello")).unwrap();
        assert_eq!((code, r["decision"].as_str()), (0, Some("allow")));
        assert_eq!(r["findings"], json!([]));
    }

    #[test]
    fn a_recorded_class_the_integration_does_not_allow_refuses() {
        // `pii` is allowed, `pci` is not: a recorded card number leaves as class pci.
        let (r, code) = test(
            &integration(Action::Record),
            &send("4111 1111 1111 1111 a@b.example"),
        )
        .unwrap();
        assert_eq!(code, EXIT_REFUSE);
        assert_eq!(
            r["refusal"]["error"]["details"][0]["reason"], "POLICY_DENIED",
            "{r}"
        );
        assert_eq!(r["findings"].as_array().unwrap().len(), 2, "{r}");
    }

    #[test]
    fn a_body_the_gateway_refuses_first_is_an_error() {
        let i = integration(Action::Refuse);
        assert!(test(&i, &Bytes::from_static(b"{not json")).is_err());
        let dup = br#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"role":"ROLE_USER"}}"#;
        let e = test(&i, &Bytes::from_static(dup)).unwrap_err();
        assert!(e.contains("duplicate"), "{e}");
        let get = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}});
        let e = test(&i, &Bytes::from(get.to_string())).unwrap_err();
        assert!(e.contains("not a message send"), "{e}");
    }
}
