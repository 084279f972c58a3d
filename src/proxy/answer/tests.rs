//! Tests of the A2A answer check and the bounded decoding of unasked-for codings (pure).

use std::io::Write;

use super::*;

/// The check alone (the ids are [`ids_are_read_in_the_checking_pass`]'s).
fn check_whole(b: Binding, id: Option<&str>, status: u16, body: &[u8]) -> Result<(), Invalid> {
    let skimmed = super::check_whole(b, id, status, body, false).map(drop);
    assert_eq!(
        super::check_whole(b, id, status, body, true).map(drop),
        skimmed
    );
    skimmed
}

#[test]
fn ids_are_read_in_the_checking_pass() {
    let body = rpc_ok("1");
    let got = super::check_whole(RPC, Some("1"), 200, body.as_bytes(), true).unwrap();
    assert_eq!(got.task.as_deref(), Some("t"));
    let task = br#"{"id":"t9","contextId":"c9","status":{"state":"working"}}"#;
    let got = super::check_event(REST, None, task, true).unwrap();
    assert!(
        super::check_event(REST, None, task, false)
            .unwrap()
            .is_empty(),
        "skimmed"
    );
    assert_eq!(
        (got.task.as_deref(), got.context.as_deref()),
        (Some("t9"), Some("c9"))
    );
    // An error answer names none, whatever its data says.
    let err = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"data":{"taskId":"x"}}}"#;
    assert!(
        super::check_whole(RPC, Some("1"), 200, err, true)
            .unwrap()
            .is_empty()
    );
}

const RPC: Binding = Binding::JsonRpc;
const REST: Binding = Binding::HttpJson;

fn rpc_ok(id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"task":{{"id":"t"}}}}}}"#)
}

#[test]
fn jsonrpc_answers_must_be_responses_to_the_request() {
    let id = Some("\"req-1\"");
    assert_eq!(
        check_whole(RPC, id, 200, rpc_ok("\"req-1\"").as_bytes()),
        Ok(())
    );
    let err = br#"{"jsonrpc":"2.0","id":"req-1","error":{"code":-32001,"message":"no"}}"#;
    assert_eq!(check_whole(RPC, id, 200, err), Ok(()));
    let null_err = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}"#;
    assert_eq!(check_whole(RPC, id, 200, null_err), Ok(()));
    let (other, null) = (rpc_ok("\"req-2\""), rpc_ok("null"));
    let cases: [(&[u8], Invalid); 11] = [
        (
            b"<html><body>Welcome to nginx</body></html>",
            Invalid::NotJson,
        ),
        (b"", Invalid::NotJson),
        (
            br#"{"jsonrpc":"2.0","id":"req-1","result":{"ta"#,
            Invalid::Truncated,
        ),
        (other.as_bytes(), Invalid::IdMismatch),
        (null.as_bytes(), Invalid::IdMismatch),
        (br#"{"jsonrpc":"2.0","result":{}}"#, Invalid::IdMismatch),
        (
            br#"{"jsonrpc":"1.0","id":"req-1","result":{}}"#,
            Invalid::NotJsonRpc,
        ),
        (br#"{"id":"req-1","result":{}}"#, Invalid::NotJsonRpc),
        (
            br#"{"jsonrpc":"2.0","id":"req-1","result":{},"error":{"code":1}}"#,
            Invalid::NotJsonRpc,
        ),
        (
            br#"{"jsonrpc":"2.0","id":"req-1","error":{"code":"x"}}"#,
            Invalid::NotJsonRpc,
        ),
        (b"[1,2]", Invalid::NotJsonRpc),
    ];
    for (body, want) in cases {
        assert_eq!(
            check_whole(RPC, id, 200, body),
            Err(want),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(
        check_whole(
            RPC,
            id,
            200,
            format!("{} trailing", rpc_ok("\"req-1\"")).as_bytes()
        ),
        Err(Invalid::NotJson)
    );
}

#[test]
fn ids_match_by_value_and_numbers_as_javascript_reads_them() {
    assert_eq!(
        check_whole(RPC, Some("7"), 200, rpc_ok("7").as_bytes()),
        Ok(())
    );
    assert_eq!(
        check_whole(RPC, Some("\"a\""), 200, rpc_ok("\"\\u0061\"").as_bytes()),
        Ok(())
    );
    let big = "123456789012345678901234567890";
    assert_eq!(
        check_whole(
            RPC,
            Some(big),
            200,
            rpc_ok("1.2345678901234568e29").as_bytes()
        ),
        Ok(())
    );
    assert_eq!(
        check_whole(RPC, Some("7"), 200, rpc_ok("\"7\"").as_bytes()),
        Err(Invalid::IdMismatch),
        "a string is not a number"
    );
    assert_eq!(
        check_whole(RPC, Some("7"), 200, rpc_ok("8").as_bytes()),
        Err(Invalid::IdMismatch)
    );
}

#[test]
fn rest_answers_must_be_objects_and_a_204_may_be_empty() {
    assert_eq!(check_whole(REST, None, 200, br#"{"task":{}}"#), Ok(()));
    assert_eq!(check_whole(REST, None, 204, b""), Ok(()));
    assert_eq!(check_whole(REST, None, 200, b""), Err(Invalid::NotJson));
    assert_eq!(check_whole(REST, None, 200, b"[]"), Err(Invalid::NotObject));
    assert_eq!(
        check_whole(REST, None, 200, b"<!doctype html>"),
        Err(Invalid::NotJson)
    );
    assert_eq!(
        check_whole(REST, None, 200, br#"{"task":"#),
        Err(Invalid::Truncated)
    );
    assert_eq!(check_whole(RPC, Some("1"), 204, b""), Err(Invalid::NotJson));
}

#[test]
fn errors_pass_as_json_and_http_level_statuses_pass_as_they_are() {
    let status = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"m"}}"#;
    assert_eq!(check_whole(REST, None, 404, status), Ok(()));
    assert_eq!(
        check_whole(REST, None, 404, br#"{"detail":"Not Found"}"#),
        Ok(())
    );
    assert_eq!(
        check_whole(REST, None, 500, b"<html>Internal Server Error</html>"),
        Err(Invalid::NotJson)
    );
    assert_eq!(
        check_whole(RPC, Some("1"), 404, b"<html>Not Found</html>"),
        Err(Invalid::NotJson)
    );
    // A load balancer's or front server's page: the status is the answer (callers' retry logic
    // reads it).
    for s in [408, 413, 502, 504] {
        assert_eq!(
            check_whole(RPC, Some("1"), s, b"<html>Bad Gateway</html>"),
            Ok(()),
            "{s}"
        );
    }
    assert_eq!(check_whole(RPC, Some("1"), 404, b""), Err(Invalid::NotJson));
    for s in HTTP_LEVEL {
        assert_eq!(
            check_whole(RPC, Some("1"), s, b"<html>go away</html>"),
            Ok(()),
            "{s}"
        );
        assert_eq!(check_whole(REST, None, s, b""), Ok(()), "{s}");
    }
    let wrong = br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"x"}}"#;
    assert_eq!(
        check_whole(RPC, Some("1"), 500, wrong),
        Err(Invalid::IdMismatch)
    );
    assert_eq!(
        check_whole(RPC, Some("1"), 301, b""),
        Err(Invalid::Redirect)
    );
    assert_eq!(check_whole(REST, None, 302, b"{}"), Err(Invalid::Redirect));
    assert!(Invalid::NotJson.marks_stale(200) && Invalid::NotJson.marks_stale(404));
    assert!(!Invalid::NotJson.marks_stale(502));
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in pairs {
        h.append(
            http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
            http::HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

#[test]
fn codings_are_identity_gzip_or_deflate_and_never_two() {
    let enc = |v: &[(&str, &str)]| encoding(&headers(v));
    assert_eq!(enc(&[]), Ok(Encoding::Identity));
    assert_eq!(
        enc(&[("content-encoding", "identity")]),
        Ok(Encoding::Identity)
    );
    assert_eq!(enc(&[("content-encoding", "GZIP")]), Ok(Encoding::Gzip));
    assert_eq!(enc(&[("content-encoding", "x-gzip")]), Ok(Encoding::Gzip));
    assert_eq!(
        enc(&[("content-encoding", "deflate")]),
        Ok(Encoding::Deflate)
    );
    for bad in [
        "br",
        "zstd",
        "compress",
        "gzip, br",
        "gzip, gzip",
        "deflate, gzip",
    ] {
        assert_eq!(
            enc(&[("content-encoding", bad)]),
            Err(Invalid::Encoding),
            "{bad}"
        );
    }
    assert_eq!(
        enc(&[("content-encoding", "gzip"), ("content-encoding", "gzip")]),
        Err(Invalid::Encoding)
    );
    assert!(passes_unread(&headers(&[(
        "content-type",
        "application/json; charset=utf-8"
    )])));
    assert!(passes_unread(&headers(&[(
        "content-type",
        "application/a2a+json"
    )])));
    assert!(!passes_unread(&headers(&[("content-type", "text/html")])));
    assert!(!passes_unread(&headers(&[])));
    assert!(!passes_unread(&headers(&[
        ("content-type", "application/json"),
        ("content-encoding", "gzip")
    ])));
}

fn gzip(data: &[u8]) -> Bytes {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    Bytes::from(e.finish().unwrap())
}

#[test]
fn gzip_and_both_deflates_decode_and_a_bomb_stops_at_the_cap() {
    let plain = rpc_ok("1");
    let body = Bytes::from(plain.clone());
    assert_eq!(
        decode(Encoding::Gzip, gzip(plain.as_bytes()), 1024),
        Ok(Decoded::Body(body.clone()))
    );
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(plain.as_bytes()).unwrap();
    let zlib = Bytes::from(z.finish().unwrap());
    assert_eq!(
        decode(Encoding::Deflate, zlib, 1024),
        Ok(Decoded::Body(body.clone()))
    );
    let mut d = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    d.write_all(plain.as_bytes()).unwrap();
    let raw = Bytes::from(d.finish().unwrap());
    assert_eq!(
        decode(Encoding::Deflate, raw, 1024),
        Ok(Decoded::Body(body.clone()))
    );
    assert_eq!(
        decode(Encoding::Identity, body.clone(), 1),
        Ok(Decoded::Body(body))
    );
    assert_eq!(
        decode(Encoding::Gzip, Bytes::from_static(b"not gzip at all"), 1024),
        Err(Invalid::Encoding)
    );
    // 64 MiB of zeros is about 64 KiB of gzip: decoding stops one byte past the cap.
    let bomb = gzip(&vec![0u8; 64 * 1024 * 1024]);
    assert!(bomb.len() < 256 * 1024, "{}", bomb.len());
    assert_eq!(
        decode(Encoding::Gzip, bomb, 1024 * 1024),
        Ok(Decoded::TooLarge)
    );
}

#[test]
fn an_empty_body_with_a_coding_has_nothing_to_decode() {
    for enc in [Encoding::Gzip, Encoding::Deflate] {
        assert_eq!(
            decode(enc, Bytes::new(), 1024),
            Ok(Decoded::Body(Bytes::new())),
            "{enc:?}"
        );
    }
    assert_eq!(check_whole(REST, None, 204, b""), Ok(()));
}

#[test]
fn the_decoding_buffer_never_grows_past_the_cap_and_one() {
    let bomb = gzip(&vec![0u8; 8 * 1024 * 1024]);
    for limit in [1024 * 1024 + 3, 1024 * 1024, 100_000] {
        let out = bounded(flate2::read::MultiGzDecoder::new(&bomb[..]), limit).unwrap();
        assert_eq!(out.len(), limit + 1);
        assert!(
            out.capacity() <= limit + 1,
            "{} > {}",
            out.capacity(),
            limit + 1
        );
    }
    let small = gzip(b"{}");
    let out = bounded(flate2::read::MultiGzDecoder::new(&small[..]), 1 << 20).unwrap();
    assert_eq!(out, b"{}");
}

#[test]
fn labels_are_distinct() {
    let labels: std::collections::HashSet<_> = Invalid::ALL.iter().map(|i| i.as_str()).collect();
    assert_eq!(labels.len(), Invalid::ALL.len());
    let ours: Vec<_> = Invalid::ALL.iter().map(|i| i.as_str()).collect();
    assert_eq!(ours, crate::metrics::INVALID_ANSWER_REASONS);
}

#[test]
fn a_null_result_is_a_result_and_a_member_twice_is_not_jsonrpc() {
    let null = br#"{"jsonrpc":"2.0","id":1,"result":null}"#;
    assert_eq!(check_whole(RPC, Some("1"), 200, null), Ok(()));
    let twice = br#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#;
    assert_eq!(
        check_whole(RPC, Some("1"), 200, twice),
        Err(Invalid::NotJsonRpc)
    );
}
