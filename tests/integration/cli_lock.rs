//! The `diff`, `lock` and `check` commands, run as the real binary: exit codes on the travel/pricing
//! fixture cards, and pinning and checking the sample `finance` integration against the bundled
//! reference agent (process and loopback I/O).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{self, RefAgent, ref_agent::PARTNER_TOKEN};

fn fixture(name: &str) -> String {
    common::repo_root()
        .join("tests/fixtures/lock")
        .join(name)
        .display()
        .to_string()
}

/// Runs the binary in `dir` (an empty temp folder unless given, so no default config applies).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    crate::common::gateway_cmd()
        .args(args)
        .current_dir(dir)
        .env("A2A_EGRESS_FINANCE_TOKEN", PARTNER_TOKEN)
        .output()
        .unwrap()
}

fn run(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn diff_exit_codes_follow_the_class_across_the_four_card_changes() {
    let lock = fixture("pricing.lock.json");
    let old = fixture("pricing-0.json");
    for (card, code, verdict) in [
        ("pricing-0-reordered.json", 0, "compatible"),
        ("pricing-1.json", 0, "compatible"),
        ("pricing-2.json", 3, "review"),
        ("pricing-3.json", 4, "breaking"),
        ("pricing-4.json", 4, "breaking"),
    ] {
        let out = run(&["diff", &old, &fixture(card), "--lock", &lock]);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{card}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let text = stdout(&out);
        assert_eq!(
            text.lines().last(),
            Some(format!("verdict: {verdict}").as_str()),
            "{card}: {text}"
        );
    }
    let out = run(&["diff", &old, &fixture("pricing-0-reordered.json")]);
    assert_eq!(stdout(&out), "verdict: compatible\n");
    let out = run(&["diff", &old, &fixture("pricing-3.json"), "--lock", &lock]);
    assert!(
        stdout(&out).contains(
            "breaking: skills.itinerary-pricing.output: [application/json] -> [text/csv] (none of the workflow's output modes is offered)\n"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_agent_moving_from_0_3_to_1_0_is_review_while_the_workflow_still_has_what_it_needs() {
    let lock = fixture("pricing-v03.lock.json");
    // The lockfile records the protocol version the workflow was pinned on.
    let text = std::fs::read_to_string(&lock).unwrap();
    let pinned: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        pinned["interface"],
        serde_json::json!({"binding": "JSONRPC", "version": "0.3"})
    );
    let old = fixture("pricing-v03.json");
    // Hand-written (a 0.3 profile cannot be pinned until 0.3 calls exist), so hold it to the card.
    let card = a2a_egress::card::validate(
        &std::fs::read(&old).unwrap(),
        &a2a_egress::card::CardPolicy::default(),
        None,
    )
    .unwrap();
    assert_eq!(pinned["card_digest"], card.digest());
    let out = run(&["diff", &old, &fixture("pricing-0.json"), "--lock", &lock]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}{}", stderr(&out));
    assert!(
        text.lines().any(|l| l
            == "review: interface: JSONRPC 0.3 -> JSONRPC 1.0 (the agent's protocol version \
                moved 0.3 -> 1.0; the chosen interface is JSONRPC 1.0; re-run probes)"),
        "{text}"
    );
    assert!(!text.contains("breaking"), "{text}");
    assert_eq!(text.lines().last(), Some("verdict: review"), "{text}");
    // A need lost in the same move is still breaking.
    let out = run(&["diff", &old, &fixture("pricing-3.json"), "--lock", &lock]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(4), "{text}{}", stderr(&out));
    assert!(
        text.contains("breaking: skills.itinerary-pricing.output: "),
        "{text}"
    );
    // pricing-3 prefers HTTP+JSON 1.0: calls would leave the pinned binding, so the interface is
    // breaking too (JSON-RPC listed at 1.0 below it is no protocol move of the pinned interface).
    assert!(
        text.lines().any(|l| l
            == "breaking: interface: JSONRPC 0.3 -> HTTP+JSON 1.0 (JSONRPC 0.3 is no longer offered)"),
        "{text}"
    );
}

#[test]
fn diff_reads_compiled_profiles_as_well_as_cards() {
    let dir = tempfile::tempdir().unwrap();
    let compiled = run(&["compile", &fixture("pricing-2.json")]);
    assert_eq!(compiled.status.code(), Some(0), "{}", stderr(&compiled));
    let profile = dir.path().join("p2.json");
    std::fs::write(&profile, &compiled.stdout).unwrap();
    let out = run(&[
        "diff",
        &fixture("pricing-1.json"),
        profile.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        "review: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (another interface is preferred; JSONRPC 1.0 is still offered; re-run probes)\n\
         review: agent_version: 3.2.0 -> 3.3.0 (agent version changed)\n\
         review: interface.url: https://pricing.partner.example/a2a/jsonrpc -> https://pricing.partner.example/a2a/rest (calls go to another URL; re-run probes)\n\
         verdict: review\n"
    );
}

#[test]
fn diff_refuses_invalid_cards_profiles_and_lockfiles_with_65() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let bad_card = write("card.json", "{\"name\": \"x\"}");
    let bad_profile = write("profile.json", "{\"usable\": true, \"card_digest\": 1}");
    let bad_lock = write(
        "lock.json",
        "{\"agent\": \"https://a.example/c\", \"surprise\": 1}",
    );
    let good = fixture("pricing-0.json");
    let out = run(&["diff", &bad_card, &good]);
    assert_eq!(out.status.code(), Some(65));
    assert!(stderr(&out).contains("invalid card"), "{}", stderr(&out));
    let out = run(&["diff", &good, &bad_profile]);
    assert_eq!(out.status.code(), Some(65));
    assert!(
        stderr(&out).contains("not a compiled profile"),
        "{}",
        stderr(&out)
    );
    let out = run(&["diff", &good, &good, "--lock", &bad_lock]);
    assert_eq!(out.status.code(), Some(65));
    assert!(
        stderr(&out).contains("unknown field `surprise`"),
        "{}",
        stderr(&out)
    );
    // A missing file is a missing input (66, as in every command), not invalid input.
    let out = run(&["diff", &good, "/nonexistent/card.json"]);
    assert_eq!(out.status.code(), Some(66));
}

/// A copy of the sample config in `dir`, pointed at `agent` (the agent's card and interfaces
/// carry its port), with the committed lockfile beside it when `with_lock`.
fn sample_config(dir: &Path, agent: &RefAgent, with_lock: bool) -> PathBuf {
    let root = common::repo_root();
    let text = std::fs::read_to_string(root.join("config/gateway.toml")).unwrap();
    let path = dir.join("gateway.toml");
    std::fs::write(
        &path,
        text.replace("127.0.0.1:7400", &agent.addr.to_string()),
    )
    .unwrap();
    if with_lock {
        std::fs::create_dir_all(dir.join("locks")).unwrap();
        std::fs::copy(
            root.join("config/locks/finance.json"),
            dir.join("locks/finance.json"),
        )
        .unwrap();
    }
    path
}

#[test]
fn the_committed_finance_lock_holds_against_the_bundled_agent() {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    let cfg = sample_config(dir.path(), &agent, true);
    let out = run_in(dir.path(), &["check", "--config", cfg.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).starts_with("finance: compatible\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn lock_then_check_and_every_exit_code_of_check() {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    let cfg = sample_config(dir.path(), &agent, false);
    let cfg = cfg.to_str().unwrap();
    let out = run_in(dir.path(), &["check", "--config", cfg]);
    assert_eq!(stdout(&out), "finance: unpinned (no lockfile)\n");
    assert_eq!(out.status.code(), Some(0));

    let out = run_in(dir.path(), &["lock", "finance", "--config", cfg]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lock_path = dir.path().join("locks/finance.json");
    assert!(stdout(&out).starts_with(&format!("wrote {}", lock_path.display())));
    let text = std::fs::read_to_string(&lock_path).unwrap();
    assert!(text.ends_with("}\n"));
    let lock: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(lock["agent"], agent.card_url);
    assert_eq!(lock["interface"]["binding"], "JSONRPC");
    assert_eq!(
        lock["requires"]["skills"]["lookup-invoice"]["output"],
        serde_json::json!(["application/json"])
    );
    let out = run_in(dir.path(), &["check", "finance", "--config", cfg]);
    assert_eq!(
        (out.status.code(), stdout(&out).as_str()),
        (Some(0), "finance: compatible\n")
    );

    // The same lock with another agent version: review (3).
    std::fs::write(
        &lock_path,
        text.replace("\"agent_version\": \"1.4.0", "\"agent_version\": \"0.9.0"),
    )
    .unwrap();
    let out = run_in(dir.path(), &["check", "--config", cfg]);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with("finance: review\n  review: agent_version: 0.9.0"),
        "{}",
        stdout(&out)
    );

    // A lock that needs what the agent does not send back: breaking (4).
    std::fs::write(
        &lock_path,
        text.replace("\"application/json\"", "\"application/pdf\""),
    )
    .unwrap();
    let out = run_in(dir.path(), &["check", "--config", cfg]);
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("  breaking: skills.lookup-invoice.output: [application/pdf] -> [application/json] (none of the workflow's output modes is offered)"),
        "{}",
        stdout(&out)
    );

    // A corrupt lockfile is breaking, naming the field.
    std::fs::write(
        &lock_path,
        text.replace("\"streaming\": true", "\"streaming\": 0"),
    )
    .unwrap();
    let out = run_in(dir.path(), &["check", "--config", cfg]);
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("requires.streaming: invalid type"),
        "{}",
        stdout(&out)
    );

    let out = run_in(dir.path(), &["check", "nope", "--config", cfg]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    let out = run_in(dir.path(), &["lock", "nope", "--config", cfg]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));

    // The agent gone: neither can fetch (1), and the lockfile is left as it was.
    std::fs::write(&lock_path, &text).unwrap();
    drop(agent);
    let before = std::fs::read(&lock_path).unwrap();
    let out = run_in(dir.path(), &["lock", "finance", "--config", cfg]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("card fetch"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&lock_path).unwrap(), before);
    let out = run_in(dir.path(), &["check", "--config", cfg]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with("finance: error: "),
        "{}",
        stdout(&out)
    );
}

/// A credential variable that is not set is `CREDENTIAL_MISSING`, not a card change: `check`
/// exits 1 with that reason (not 4 "breaking" with `usable: true -> false`), `probe` and `lock`
/// say why, and the lockfile is left as it was.
#[test]
fn a_missing_credential_is_credential_missing_for_check_probe_and_lock() {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    let cfg = sample_config(dir.path(), &agent, true);
    let cfg = cfg.to_str().unwrap();
    let without = |args: &[&str]| {
        crate::common::gateway_cmd()
            .args(args)
            .current_dir(dir.path())
            .env_remove("A2A_EGRESS_FINANCE_TOKEN")
            .output()
            .unwrap()
    };
    let want =
        "CREDENTIAL_MISSING: credential environment variable A2A_EGRESS_FINANCE_TOKEN is not set";
    let out = without(&["check", "--config", cfg]);
    assert_eq!(
        (out.status.code(), stdout(&out)),
        (Some(1), format!("finance: error: {want}\n")),
        "{}",
        stderr(&out)
    );
    let out = without(&["probe", "finance", "--config", cfg]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(want), "{}", stderr(&out));
    let before = std::fs::read(dir.path().join("locks/finance.json")).unwrap();
    let out = without(&["lock", "finance", "--config", cfg]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(want), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(dir.path().join("locks/finance.json")).unwrap(),
        before
    );
    // With the variable back, the same lockfile holds.
    let out = run_in(dir.path(), &["check", "--config", cfg]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn lock_refuses_a_profile_the_workflow_cannot_use() {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    let cfg = sample_config(dir.path(), &agent, false);
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "input_modes = [\"text/plain\"]",
        "input_modes = [\"application/pdf\"]",
    );
    std::fs::write(&cfg, text).unwrap();
    let out = run_in(
        dir.path(),
        &["lock", "finance", "--config", cfg.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("finance: cannot pin: skills.echo.input: the skill accepts [text/plain], none of the media types the integration sends ([application/pdf])"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("locks/finance.json").exists());
}
