//! The container image as built and run from the repository: bases pinned by digest (and every
//! other image the kit pulls: the boundary image's base, the pod's helper containers), OCI labels
//! that agree with `Cargo.toml`, a builder that uses `rust-toolchain.toml`'s toolchain without
//! downloading components, a build context that keeps secrets, `node_modules` and build output
//! out, and the README's `docker run` command checked against the Dockerfile, the CLI and the
//! config it mounts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{
    assert_cli_accepts, deploy_dir, docker_instructions, exec_form, kube_docs, of_kind,
    pod_containers, read,
};
use crate::common::repo_root;

type Instructions = Vec<(String, String)>;

/// The Dockerfile's stages, each starting with its `FROM`.
fn stages() -> Vec<Instructions> {
    let mut out: Vec<Instructions> = Vec::new();
    for ins in docker_instructions(&read(&deploy_dir().join("Dockerfile"))) {
        if ins.0 == "FROM" {
            out.push(Vec::new());
        }
        out.last_mut()
            .expect("the Dockerfile starts with FROM")
            .push(ins);
    }
    assert!(out.len() >= 2, "a multi-stage build");
    out
}

/// The image reference of a stage's `FROM` (flags such as `--platform` skipped).
fn from_image(stage: &Instructions) -> &str {
    stage[0]
        .1
        .split_whitespace()
        .find(|w| !w.starts_with("--"))
        .expect("FROM names an image")
}

/// `KEY=value` pairs of a stage's `op` instructions (`ENV`, `LABEL`), quotes removed.
fn pairs(stage: &Instructions, op: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (_, args) in stage.iter().filter(|(o, _)| o == op) {
        let mut rest = args.trim();
        while !rest.is_empty() {
            let (key, after) = rest
                .split_once('=')
                .unwrap_or_else(|| panic!("{op} {args}"));
            let (value, tail) = match after.strip_prefix('"') {
                Some(quoted) => quoted
                    .split_once('"')
                    .unwrap_or_else(|| panic!("{op} {args}")),
                None => after.split_once(char::is_whitespace).unwrap_or((after, "")),
            };
            out.insert(key.trim().to_owned(), value.to_owned());
            rest = tail.trim_start();
        }
    }
    out
}

/// `[package]` of the gateway's `Cargo.toml`.
fn package() -> toml::Table {
    let manifest: toml::Table = read(&repo_root().join("Cargo.toml")).parse().unwrap();
    manifest["package"].as_table().unwrap().clone()
}

#[test]
fn every_base_image_is_pinned_by_digest_and_the_labels_say_what_the_image_is() {
    let stages = stages();
    for stage in &stages {
        let image = from_image(stage);
        assert!(pinned(image), "FROM {image}: not pinned by a sha256 digest");
    }
    let runtime = stages.last().unwrap();
    let labels = pairs(runtime, "LABEL");
    let label = |k: &str| {
        labels
            .get(&format!("org.opencontainers.image.{k}"))
            .unwrap_or_else(|| panic!("no org.opencontainers.image.{k} label: {labels:?}"))
            .as_str()
    };
    let package = package();
    for (k, field) in [
        ("title", "name"),
        ("version", "version"),
        ("licenses", "license"),
        ("description", "description"),
    ] {
        assert_eq!(label(k), package[field].as_str().unwrap(), "label {k}");
    }
    let (name, digest) = from_image(runtime).split_once('@').unwrap();
    assert_eq!(label("base.name"), name);
    assert_eq!(label("base.digest"), digest);
    assert!(!label("revision").is_empty());
}

/// Whether `image` is pinned by a sha256 digest (`name[:tag]@sha256:<64 hex>`).
fn pinned(image: &str) -> bool {
    image
        .split_once("@sha256:")
        .is_some_and(|(_, d)| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn every_image_the_kit_pulls_from_elsewhere_is_pinned_by_digest() {
    // The boundary image's base: it runs as root with NET_ADMIN in the orchestrator's pod.
    let boundary = docker_instructions(&read(&deploy_dir().join("boundary/Dockerfile")));
    let froms: Vec<&str> = boundary
        .iter()
        .filter(|(op, _)| op == "FROM")
        .map(|(_, args)| {
            args.split_whitespace()
                .find(|w| !w.starts_with("--"))
                .unwrap()
        })
        .collect();
    assert!(!froms.is_empty(), "deploy/boundary/Dockerfile has a FROM");
    for image in froms {
        assert!(
            pinned(image),
            "deploy/boundary/Dockerfile: FROM {image} is not pinned by digest"
        );
    }
    // The pod's containers: the two images this repository builds are tagged by its version
    // (they are built, not pulled), and the orchestrator is the reader's own; anything else is
    // pulled from a public registry and must be pinned.
    let docs = kube_docs();
    let pod = &of_kind(&docs, "Deployment")["spec"]["template"]["spec"];
    let version = package()["version"].as_str().unwrap().to_owned();
    let mut pulled = 0;
    for c in pod_containers(pod) {
        let image = c["image"]
            .as_str()
            .expect("every container names its image");
        let built_here = [
            format!("a2a-egress:{version}"),
            format!("a2a-egress-boundary:{version}"),
        ]
        .contains(&image.to_owned());
        if built_here || image.starts_with("registry.example.com/") {
            continue;
        }
        pulled += 1;
        assert!(
            pinned(image),
            "sidecar.yaml: container {} runs {image}, not pinned by digest",
            c["name"]
        );
    }
    assert!(
        pulled > 0,
        "the pod pulls at least its token-copy helper from a registry"
    );
}

#[test]
fn the_builder_is_the_toolchain_files_rust_and_downloads_no_toolchain_component() {
    let toolchain: toml::Table = read(&repo_root().join("rust-toolchain.toml"))
        .parse()
        .unwrap();
    let channel = toolchain["toolchain"]["channel"].as_str().unwrap();
    let stages = stages();
    let builder = stages
        .iter()
        .find(|s| {
            s.iter()
                .any(|(op, a)| op == "RUN" && a.contains("cargo build"))
        })
        .expect("a stage runs cargo build");
    let image = from_image(builder);
    assert!(
        image.starts_with(&format!("rust:{channel}-")),
        "the builder {image} is not rust:{channel} (rust-toolchain.toml)"
    );
    // The toolchain file lists components the image does not have (its profile is minimal):
    // only an override keeps rustup from fetching them on the first cargo call.
    let env = pairs(builder, "ENV");
    assert_eq!(
        env.get("RUSTUP_TOOLCHAIN").map(String::as_str),
        Some(channel)
    );
    assert_eq!(
        env.get("RUSTUP_AUTO_INSTALL").map(String::as_str),
        Some("0")
    );
    for (op, args) in builder {
        assert!(
            !(op == "RUN" && (args.contains("rustup ") || args.contains("sh.rustup.rs"))),
            "the build installs toolchain parts: {args}"
        );
    }
    // The binary links the builder's glibc: the runtime must be the same Debian release.
    let runtime = from_image(stages.last().unwrap());
    let release = [("bookworm", "debian12"), ("trixie", "debian13")]
        .into_iter()
        .find(|(codename, _)| image.contains(codename))
        .unwrap_or_else(|| panic!("{image}: which Debian release?"));
    assert!(
        runtime.contains(release.1),
        "{image} builds for {}, the runtime is {runtime}",
        release.1
    );
}

/// `.dockerignore` patterns, as the builders read them (relative to the context's root).
fn ignore_patterns() -> Vec<Vec<String>> {
    let text = read(&repo_root().join(".dockerignore"));
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for l in &lines {
        // The matcher below has no exceptions or character classes: none may be needed.
        assert!(
            !l.starts_with('!') && !l.contains('['),
            ".dockerignore: {l}"
        );
    }
    lines
        .iter()
        .map(|l| l.trim_matches('/').split('/').map(str::to_owned).collect())
        .collect()
}

/// One path segment against one pattern segment (`*` any run, `?` one character).
fn segment_matches(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            segment_matches(&pattern[1..], name)
                || (!name.is_empty() && segment_matches(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => segment_matches(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) => p == n && segment_matches(&pattern[1..], &name[1..]),
        _ => false,
    }
}

/// A pattern against a path; `**` is any number of segments, none included.
fn path_matches(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((p, rest)) if p == "**" => (0..=path.len()).any(|i| path_matches(rest, &path[i..])),
        Some((p, rest)) => {
            !path.is_empty()
                && segment_matches(p.as_bytes(), path[0].as_bytes())
                && path_matches(rest, &path[1..])
        }
    }
}

/// Whether the build context leaves `path` out: it, or a folder it is in, matches a pattern.
fn ignored(patterns: &[Vec<String>], path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    (1..=segments.len()).any(|n| patterns.iter().any(|p| path_matches(p, &segments[..n])))
}

/// Every file below `dir` (relative to the repository root), not entering `node_modules`,
/// `__pycache__` or `target`.
fn files_below(dir: &str) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !matches!(name.as_str(), "node_modules" | "__pycache__" | "target") {
                    walk(root, &p, out);
                }
            } else {
                let rel = p.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let root = repo_root();
    let mut out = Vec::new();
    walk(&root, &root.join(dir), &mut out);
    out
}

#[test]
fn the_build_context_leaves_out_secrets_node_modules_and_build_output_but_not_the_source() {
    let patterns = ignore_patterns();
    for path in [
        "node_modules/x/index.js",
        "tests/peers/js/node_modules/@a2a-js/sdk/package.json",
        "tests/peers/js03/node_modules/.package-lock.json",
        "some/deeper/folder/node_modules/y.js",
        "target/release/a2a-egress",
        "fuzz/target/x",
        ".git/HEAD",
        ".venv/bin/python",
        ".venv03/lib/python3.11/site-packages/certifi/cacert.pem",
        "config/keys/gateway.jwk.json",
        "config/keys/old.jwk",
        "config/secrets/admin.token",
        "admin.token",
        "deploy/kubernetes/admin.token",
        "certs/finance-ca.pem",
        "tls/server.key",
        "credentials.env",
        "etc/a2a-egress/credentials.env",
        ".env",
    ] {
        assert!(
            ignored(&patterns, path),
            "{path} would be sent to the builder"
        );
    }
    // Whatever is in this checkout: every node_modules folder, at any depth.
    let tests = files_below("tests");
    for dir in [
        "tests/peers/js/node_modules",
        "tests/peers/js03/node_modules",
    ] {
        if repo_root().join(dir).is_dir() {
            assert!(ignored(&patterns, &format!("{dir}/x")), "{dir}");
        }
    }
    // What cargo needs to build the workspace is all there.
    let mut needed: Vec<String> = [
        "Cargo.toml",
        "Cargo.lock",
        "rust-toolchain.toml",
        "deny.toml",
    ]
    .map(str::to_owned)
    .to_vec();
    for dir in ["src", "agent", "benches", "schemas", "config"] {
        needed.extend(files_below(dir));
    }
    needed.extend(tests);
    assert!(needed.len() > 100, "{}", needed.len());
    let left_out: Vec<&String> = needed.iter().filter(|p| ignored(&patterns, p)).collect();
    assert!(left_out.is_empty(), "left out of the build: {left_out:?}");
}

/// The README's command lines in its "Deployment" section that start with `prefix`.
fn readme_commands(prefix: &str) -> Vec<String> {
    let readme = read(&repo_root().join("README.md"));
    let start = readme
        .find("\n## Deployment\n")
        .expect("a Deployment section");
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    section
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// Shell words of a simple command line: double quotes grouped, `$PWD` the repository root.
fn words(line: &str) -> Vec<String> {
    let root = repo_root();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    assert!(!quoted, "unbalanced quotes: {line}");
    out.push(cur);
    out.retain(|w| !w.is_empty());
    out.iter()
        .map(|w| w.replace("$PWD", root.to_str().unwrap()))
        .collect()
}

/// A `docker run` line, read as Docker does.
#[derive(Debug, Default)]
struct DockerRun {
    network: Option<String>,
    env: Vec<String>,
    /// (source: a host path or a volume name, target in the container).
    mounts: Vec<(String, String)>,
    /// Container ports published with `-p`.
    published: Vec<u16>,
    image: String,
    args: Vec<String>,
}

fn docker_run(line: &str) -> DockerRun {
    let w = words(line);
    assert_eq!(w[..2], ["docker", "run"], "{line}");
    let mut run = DockerRun::default();
    let mut it = w[2..].iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| panic!("{flag} needs a value"))
                .clone()
        };
        match flag.as_str() {
            "--rm" | "-d" | "-it" | "-i" | "-t" | "--init" => {}
            "--network" | "--net" => run.network = Some(value()),
            "-e" | "--env" => run.env.push(value()),
            "-v" | "--volume" => {
                let v = value();
                let mut parts = v.split(':');
                let (src, dst) = (parts.next().unwrap(), parts.next().expect("-v SRC:DST"));
                run.mounts.push((src.to_owned(), dst.to_owned()));
            }
            "-p" | "--publish" => {
                let v = value();
                let port = v.rsplit(':').next().unwrap().trim_end_matches("/tcp");
                run.published
                    .push(port.parse().unwrap_or_else(|_| panic!("-p {v}")));
            }
            f if f.starts_with('-') => panic!("{line}: a flag this test does not know: {f}"),
            image => {
                run.image = image.to_owned();
                run.args = it.cloned().collect();
                break;
            }
        }
    }
    run
}

/// The host path behind `path` in the container, through the run's bind mounts.
fn on_host(run: &DockerRun, path: &str) -> PathBuf {
    run.mounts
        .iter()
        .filter(|(src, _)| src.starts_with('/'))
        .find_map(|(src, dst)| {
            Path::new(path)
                .strip_prefix(dst)
                .ok()
                .map(|rest| Path::new(src).join(rest))
        })
        .unwrap_or_else(|| panic!("{path} is on no bind mount of {:?}", run.mounts))
}

#[test]
fn the_readmes_docker_run_works_with_the_image_and_the_config_it_mounts() {
    let builds = readme_commands("docker build ");
    assert_eq!(builds.len(), 1, "{builds:?}");
    let build = words(&builds[0]);
    let flag = |f: &str| build.iter().skip_while(|w| *w != f).nth(1).cloned();
    assert_eq!(flag("-f").as_deref(), Some("deploy/Dockerfile"));
    assert_eq!(
        build.last().map(String::as_str),
        Some("."),
        "built from the root"
    );
    let runs = readme_commands("docker run ");
    assert_eq!(runs.len(), 1, "{runs:?}");
    // The Dockerfile's own comment shows the same command.
    let dockerfile = read(&deploy_dir().join("Dockerfile"));
    assert!(
        dockerfile.contains(&format!("#   {}\n", runs[0])),
        "{}",
        runs[0]
    );
    let run = docker_run(&runs[0]);
    assert_eq!(
        Some(&run.image),
        flag("-t").as_ref(),
        "runs the image it built"
    );

    let stage = stages().pop().unwrap();
    let last = |op: &str| stage.iter().rev().find(|(o, _)| o == op).unwrap().1.clone();
    let args = if run.args.is_empty() {
        exec_form("CMD", &last("CMD"))
    } else {
        run.args.clone()
    };
    assert_cli_accepts("the README's docker run", &args);
    let config_path = args
        .iter()
        .skip_while(|a| *a != "--config")
        .nth(1)
        .expect("--config");
    let host_config = on_host(&run, config_path);
    let config = a2a_egress::config::Config::load(&host_config)
        .unwrap_or_else(|e| panic!("{}: {e}", host_config.display()));

    // Reachable: loopback listeners need the host's network; otherwise each port is published.
    let ports = [config.listen.proxy.port(), config.listen.admin.port()];
    if config.listen.proxy.ip().is_loopback() || config.listen.admin.ip().is_loopback() {
        assert_eq!(
            run.network.as_deref(),
            Some("host"),
            "the config listens on loopback: only --network host reaches it"
        );
    } else {
        for p in ports {
            assert!(run.published.contains(&p), "port {p} is not published");
        }
    }
    for p in &run.published {
        assert!(
            ports.contains(p),
            "-p names {p}, the config listens on {ports:?}"
        );
    }
    for i in &config.integrations {
        if let a2a_egress::config::Credential::Bearer(a2a_egress::config::SecretSource::Env(var)) =
            &i.credential
        {
            assert!(
                run.env
                    .iter()
                    .any(|e| e == var || e.starts_with(&format!("{var}="))),
                "{var} is not passed with -e"
            );
        }
    }
    // Every mount is used: bind mounts exist, a named volume holds the config's state dir.
    for (src, dst) in &run.mounts {
        if src.starts_with('/') {
            assert!(Path::new(src).exists(), "-v {src}: no such path");
        } else {
            assert_eq!(
                config.state_dir.as_deref(),
                Some(Path::new(dst)),
                "-v {src}:{dst}"
            );
        }
    }
}
