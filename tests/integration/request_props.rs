//! Property tests of the data plane's request decision against hostile requests (generators from
//! `a2a_egress::testkit::hostile`): multi-byte, control and bidi text in methods, ids, tenants, paths, media
//! types and data-class lines; duplicate keys at any depth as raw JSON text; deep nesting; numbers
//! no float holds.
//!
//! Invariants: nothing panics; a body with a duplicate key is always refused; the forwarded body is
//! the caller's bytes plus at most the tenant member the gateway spliced in; every gateway answer on
//! the JSON-RPC route is valid JSON-RPC (`jsonrpc` "2.0", the caller's id or null, an error object
//! with an integer code); a caller can never change the tenant the profile pins.

use a2a_egress::config::Integration;
use a2a_egress::profile::{Binding, Profile, SkillProfile};
use a2a_egress::proxy::body::{BodyError, RpcRequest, parse_jsonrpc, parse_rest_body};
use a2a_egress::proxy::deny::{Deny, Shape};
use a2a_egress::proxy::policy::{self, DataClasses, Facts};
use a2a_egress::proxy::route::{Route, check_path, route};
use a2a_egress::state::IntegrationState;
use bytes::Bytes;
use proptest::prelude::*;
use serde_json::Value;

use a2a_egress::testkit::hostile::{
    self, Raw, Style, deep_nesting, hostile_media_type, hostile_string, hostile_tenant,
    huge_number, with_duplicate_key,
};

const PINNED: &str = "t1";

const METHODS: &[&str] = &[
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "GetExtendedAgentCard",
    "CreateTaskPushNotificationConfig",
    "message/send",
    "",
];

fn state(binding: Binding, tenant: Option<&str>) -> IntegrationState {
    let url = match binding {
        Binding::JsonRpc => "http://127.0.0.1:9/jsonrpc",
        Binding::HttpJson | Binding::Grpc => "http://127.0.0.1:9/rest",
    };
    let integration = Integration::builder("echo")
        .origin("http://127.0.0.1:9")
        .skills(&["echo"])
        .data_classes(&["internal", "public"])
        .max_body_bytes(1 << 20)
        .build();
    let profile = Profile::builder()
        .card_digest("sha256:0")
        .url(url)
        .binding(binding)
        .tenant(tenant)
        .streaming(true)
        .skill_with(
            "echo",
            SkillProfile::builder()
                .input(&["text/plain", "image/*"])
                .build(),
        )
        .build();
    a2a_egress::state::IntegrationState::for_tests(integration, profile)
}

static NO_CLASS: DataClasses = DataClasses::Named(Vec::new());
static RPC: Route = Route::JsonRpc {
    name: String::new(),
};

fn facts<'a>(rpc: Option<&'a RpcRequest>) -> Facts<'a> {
    Facts {
        route: &RPC,
        http_method: "POST",
        query: None,
        data_class: &NO_CLASS,
        a2a_version: None,
        rpc,
        rest_body: None,
        default_data_class: "internal",
        body: rpc.map_or(&[][..], |r| &r.body()[..]),
        request_id: "r-1",
    }
}

/// What the gateway answers or forwards for a JSON-RPC body, decided against `st`.
enum Outcome {
    Refused(Bytes),
    Forwarded(Bytes),
}

fn gateway(body: &[u8], st: &IntegrationState) -> Outcome {
    let body = Bytes::copy_from_slice(body);
    let render = |d: Deny, shape: &Shape| Outcome::Refused(d.render(shape, Some("echo")).body);
    match parse_jsonrpc(&body) {
        Err(e) => render(e.error.into(), &Shape::JsonRpc(e.id)),
        Ok(rpc) => match policy::decide(st, &facts(Some(&rpc))) {
            Err(d) => render(d, &Shape::JsonRpc(rpc.id.clone())),
            Ok(plan) => Outcome::Forwarded(plan.rewritten_body.unwrap_or(body)),
        },
    }
}

/// The id member's text in `body`, when the top-level object has exactly one readable id.
fn sent_id(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let parsed: IdOnly<'_> = serde_json::from_slice(body).ok()?;
    parsed.id.map(|r| r.get().to_owned())
}

/// A gateway answer: the id as raw text (it may be a number no float holds, such as `1e400`, echoed
/// as sent), everything else as JSON.
#[derive(serde::Deserialize)]
struct Answer<'a> {
    jsonrpc: Value,
    #[serde(borrow)]
    id: &'a serde_json::value::RawValue,
    error: Value,
}

fn answer(bytes: &[u8]) -> Result<Answer<'_>, TestCaseError> {
    serde_json::from_slice(bytes).map_err(|e| {
        TestCaseError::fail(format!(
            "answer is not a JSON-RPC error ({e}): {}",
            String::from_utf8_lossy(bytes)
        ))
    })
}

/// A refusal on the JSON-RPC route is a JSON-RPC error envelope with an integer code whose id is
/// null or the caller's id, written exactly as the caller wrote it.
fn assert_valid_jsonrpc_error(bytes: &[u8], request: &[u8]) -> Result<(), TestCaseError> {
    let v = answer(bytes)?;
    prop_assert_eq!(&v.jsonrpc, "2.0");
    prop_assert!(v.error["code"].is_i64(), "{}", v.error);
    prop_assert!(v.error["message"].is_string(), "{}", v.error);
    prop_assert_eq!(&v.error["data"][0]["domain"], "a2a-egress");
    if v.id.get() != "null" {
        let answer = bytes;
        let text = String::from_utf8_lossy(answer);
        let id = sent_id(request).unwrap_or_default();
        prop_assert_eq!(v.id.get(), id.as_str());
        prop_assert!(
            text.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},")),
            "id not echoed as sent ({id}): {text}"
        );
    }
    Ok(())
}

fn string_leaf() -> impl Strategy<Value = Raw> {
    prop_oneof![
        hostile_string().prop_map(Raw::Str),
        "[a-z]{1,8}".prop_map(Raw::Str)
    ]
}

/// A JSON-RPC id: strings (hostile), numbers (huge), null, or something that is not an id.
fn id() -> impl Strategy<Value = Raw> {
    prop_oneof![
        4 => string_leaf(),
        4 => huge_number().prop_map(Raw::Num),
        1 => Just(Raw::Null),
        1 => Just(Raw::Arr(vec![])),
        1 => Just(Raw::Bool(true)),
    ]
}

fn part() -> impl Strategy<Value = Raw> {
    (
        prop_oneof![Just("text"), Just("raw"), Just("url"), Just("data")],
        prop::option::of(hostile_media_type()),
        hostile::raw_json(vec!["k", "mediaType"], 2),
    )
        .prop_map(|(kind, mt, meta)| {
            let mut m = vec![(kind.to_string(), Raw::Str("x".into()))];
            if let Some(mt) = mt {
                m.push(("mediaType".into(), Raw::Str(mt)));
            }
            m.push(("metadata".into(), meta));
            Raw::Obj(m)
        })
}

/// `params` with hostile free-form members, a message with parts, and maybe a tenant.
fn params(tenant: impl Strategy<Value = Option<Raw>>) -> impl Strategy<Value = Raw> {
    (
        tenant,
        prop::collection::vec(part(), 0..3),
        hostile::raw_json(vec!["tenant", "id", "method", "a"], 3),
        huge_number(),
    )
        .prop_map(|(tenant, parts, extra, n)| {
            let mut m = Vec::new();
            if let Some(t) = tenant {
                m.push(("tenant".to_string(), t));
            }
            m.push((
                "message".into(),
                Raw::Obj(vec![
                    ("messageId".into(), Raw::Str("m".into())),
                    ("parts".into(), Raw::Arr(parts)),
                    ("metadata".into(), Raw::Obj(vec![("n".into(), Raw::Num(n))])),
                ]),
            ));
            m.push(("extra".into(), extra));
            Raw::Obj(m)
        })
}

fn envelope(params: impl Strategy<Value = Raw>) -> impl Strategy<Value = Raw> {
    (id(), prop::sample::select(METHODS), params, any::<bool>()).prop_map(
        |(id, method, params, params_first)| {
            let mut m = vec![
                ("jsonrpc".to_string(), Raw::Str("2.0".into())),
                ("id".into(), id),
                ("method".into(), Raw::Str(method.into())),
            ];
            let p = ("params".to_string(), params);
            if params_first {
                m.insert(0, p);
            } else {
                m.push(p);
            }
            Raw::Obj(m)
        },
    )
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![
        Just(Style::Compact),
        Just(Style::Spaced),
        Just(Style::Escaped)
    ]
}

/// Tenants a caller may try: absent, empty, the pinned one, hostile strings, non-strings.
fn caller_tenant() -> impl Strategy<Value = Option<Raw>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(Raw::Str(String::new()))),
        1 => Just(Some(Raw::Str(PINNED.into()))),
        3 => hostile_tenant().prop_map(|t| Some(Raw::Str(t))),
        1 => huge_number().prop_map(|n| Some(Raw::Num(n))),
        1 => Just(Some(Raw::Null)),
    ]
}

/// Whether `forwarded` is `sent` with `removed` replaced by `inserted` at one position.
fn is_one_splice(sent: &[u8], forwarded: &[u8], removed: &[u8], inserted: &[u8]) -> bool {
    if sent.len() + inserted.len() != forwarded.len() + removed.len() {
        return false;
    }
    (0..=sent.len().saturating_sub(removed.len())).any(|p| {
        sent[..p] == forwarded[..p]
            && sent[p..p + removed.len()] == *removed
            && forwarded[p..p + inserted.len()] == *inserted
            && sent[p + removed.len()..] == forwarded[p + inserted.len()..]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_input_panics_and_every_refusal_is_valid_jsonrpc(
        body in prop_oneof![
            envelope(params(caller_tenant())).prop_flat_map(|e| style().prop_map(move |s| e.render(s))),
            deep_nesting(),
            hostile::raw_json(vec!["jsonrpc", "id", "method", "params"], 4).prop_map(|r| r.text()),
            hostile_string(),
            prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        ],
        pinned in prop::option::of(Just(PINNED)),
    ) {
        let st = state(Binding::JsonRpc, pinned);
        if let Outcome::Refused(answer) = gateway(body.as_bytes(), &st) {
            assert_valid_jsonrpc_error(&answer, body.as_bytes())?;
        }
        let _ = parse_rest_body(body.as_bytes(), true);
    }

    #[test]
    fn a_duplicate_key_anywhere_is_always_refused(
        // Free-form params (a full `params()` tree under `with_duplicate_key` overflows the test
        // thread's stack while generating, in debug builds).
        doc in envelope(hostile::raw_json(vec!["tenant", "message", "parts", "mediaType", "id"], 3))
            .prop_flat_map(with_duplicate_key),
        style in style(),
    ) {
        prop_assume!(doc.has_duplicate_key());
        let text = doc.render(style);
        let st = state(Binding::JsonRpc, Some(PINNED));
        let err = parse_jsonrpc(&Bytes::from(text.clone())).err();
        prop_assert!(
            matches!(err.as_ref().map(|e| &e.error), Some(BodyError::DuplicateKey { .. })),
            "{err:?} for {text}"
        );
        let Outcome::Refused(refusal) = gateway(text.as_bytes(), &st) else {
            return Err(TestCaseError::fail(format!("forwarded: {text}")));
        };
        let v = answer(&refusal)?;
        prop_assert_eq!(&v.error["data"][0]["reason"], "DUPLICATE_JSON_KEY");
        let rest = parse_rest_body(text.as_bytes(), true);
        prop_assert!(matches!(rest, Err(BodyError::DuplicateKey { .. })), "{:?}", rest);
    }

    #[test]
    fn the_forwarded_body_is_the_callers_bytes_plus_only_the_tenant(
        doc in envelope(params(prop_oneof![Just(None), Just(Some(Raw::Str(String::new())))])),
        style in style(),
    ) {
        prop_assume!(!doc.has_duplicate_key());
        let sent = doc.render(style);
        let Outcome::Forwarded(fwd) = gateway(sent.as_bytes(), &state(Binding::JsonRpc, Some(PINNED))) else {
            return Ok(());
        };
        let spliced: [(&[u8], &[u8]); 4] = [
            (b"", b"\"tenant\":\"t1\","),
            (b"", b"\"tenant\":\"t1\""),
            (b"", b",\"params\":{\"tenant\":\"t1\"}"),
            (b"\"\"", b"\"t1\""),
        ];
        prop_assert!(
            spliced.iter().any(|(r, i)| is_one_splice(sent.as_bytes(), &fwd, r, i)),
            "not one tenant splice: {} → {}",
            sent, String::from_utf8_lossy(&fwd)
        );
        let again = parse_jsonrpc(&fwd).unwrap();
        prop_assert_eq!(again.tenant(), Some(PINNED));
        // No tenant to apply: not one byte changes.
        if let Outcome::Forwarded(same) = gateway(sent.as_bytes(), &state(Binding::JsonRpc, None)) {
            prop_assert_eq!(&same[..], sent.as_bytes());
        }
    }

    #[test]
    fn a_caller_can_never_change_the_pinned_tenant(
        doc in envelope(params(caller_tenant())),
        style in style(),
        escaped_key in any::<bool>(),
    ) {
        let mut sent = doc.render(style);
        if escaped_key {
            // The same key spelled with an escape is the same key to every JSON reader.
            sent = sent.replacen("\"tenant\"", "\"\\u0074enant\"", 1);
        }
        if let Outcome::Forwarded(fwd) = gateway(sent.as_bytes(), &state(Binding::JsonRpc, Some(PINNED))) {
            let fwd_rpc = parse_jsonrpc(&fwd).unwrap();
            prop_assert_eq!(fwd_rpc.tenant(), Some(PINNED), "{}", String::from_utf8_lossy(&fwd));
        }
    }

    #[test]
    fn rest_tenants_and_paths_cannot_escape_the_pinned_tenant(
        path_tenant in prop::option::of(hostile_tenant()),
        body_tenant in caller_tenant(),
        tail in prop::sample::select(vec!["/message:send", "/tasks/a", "/tasks/a:cancel", "/tasks"]),
        style in style(),
    ) {
        let seg = path_tenant.as_deref().map(|t| {
            percent_encoding::utf8_percent_encode(t, percent_encoding::NON_ALPHANUMERIC).to_string()
        });
        let path = match &seg {
            Some(s) => format!("/agents/echo/{s}{tail}"),
            None => format!("/agents/echo{tail}"),
        };
        if check_path(&path).is_err() {
            return Ok(());
        }
        let r = route(&path);
        let mut members = vec![("message".to_string(), Raw::Obj(vec![("parts".into(), Raw::Arr(vec![Raw::Obj(vec![("text".into(), Raw::Str("x".into()))])]))]))];
        if let Some(t) = body_tenant {
            members.push(("tenant".into(), t));
        }
        let body = Raw::Obj(members).render(style);
        let http_method = if tail == "/tasks/a" || tail == "/tasks" { "GET" } else { "POST" };
        let Ok(facts) = parse_rest_body(body.as_bytes(), tail == "/message:send") else {
            return Ok(());
        };
        let st = state(Binding::HttpJson, Some(PINNED));
        let f = Facts {
            route: &r,
            http_method,
            query: None,
            data_class: &NO_CLASS,
            a2a_version: None,
            rpc: None,
            rest_body: Some(&facts),
            default_data_class: "internal",
            body: body.as_bytes(),
            request_id: "r-1",
        };
        if let Ok(plan) = policy::decide(&st, &f) {
            prop_assert_eq!(plan.tenant.as_deref(), Some(PINNED));
            prop_assert!(plan.upstream_path.starts_with("/rest/t1/"), "{}", plan.upstream_path);
            prop_assert!(!plan.upstream_path.contains(".."), "{}", plan.upstream_path);
        }
    }

    #[test]
    fn every_data_class_line_counts(
        lines in prop::collection::vec(prop_oneof![
            Just("public".to_string()),
            Just("internal, PUBLIC".to_string()),
            Just(" , ".to_string()),
            Just("secret".to_string()),
            hostile_string(),
        ], 0..4),
    ) {
        let classes = DataClasses::from_lines(lines.iter().map(|l| l.as_bytes()));
        let allowed = vec!["internal".to_string(), "public".to_string()];
        let ok = policy::check_data_classes(&classes, "internal", &allowed).is_ok();
        let readable = lines.iter().all(|l| l.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)));
        let all_allowed = lines.iter().flat_map(|l| l.split(',')).map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty()).all(|c| allowed.contains(&c));
        prop_assert_eq!(ok, readable && all_allowed, "{:?}", lines);
    }
}
