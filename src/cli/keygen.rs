//! `a2a-egress keygen`: writes a new private signing key for the gateway's effective cards and
//! prints its public JWK (writes one file).
//!
//! The file is created with mode 0600 (the gateway refuses a key that group or others may read)
//! under a temporary name beside the target, then linked into place, so an existing key is never
//! replaced without `--force` and a reader never sees a half-written key.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use crate::card::sign::SigningKey;
use crate::card::signature::SigAlg;

/// Arguments of `a2a-egress keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Where to write the private JWK (e.g. keys/gateway.jwk.json); refused if it exists.
    #[arg(long)]
    out: PathBuf,
    /// Signature algorithm: ES256 (EC P-256) or EdDSA (Ed25519).
    #[arg(long, value_enum, default_value = "ES256")]
    alg: Alg,
    /// Key id named in every signature [default: the key's RFC 7638 thumbprint].
    #[arg(long)]
    kid: Option<String>,
    /// Replace an existing file.
    #[arg(long)]
    force: bool,
}

/// The algorithms `keygen` makes keys for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Alg {
    #[value(name = "ES256")]
    Es256,
    #[value(name = "EdDSA")]
    EdDsa,
}

/// Writes the key and prints the public JWK on stdout; exit 0, or 1 with the reason on stderr.
pub fn run(args: &KeygenArgs) -> anyhow::Result<ExitCode> {
    let alg = match args.alg {
        Alg::Es256 => SigAlg::ES256,
        Alg::EdDsa => SigAlg::EdDSA,
    };
    if !args.force && args.out.exists() {
        bail!(
            "{} exists; pass --force to replace it (cards signed with the old key stop \
             verifying unless it stays in [effective_card] previous_keys)",
            args.out.display()
        );
    }
    let (key, private) = SigningKey::generate(alg, args.kid.as_deref())?;
    write_private(&args.out, private.as_bytes(), args.force)?;
    println!("{:#}", key.public_jwk());
    eprintln!(
        "wrote {} ({}, kid {:?}, mode 0600); give the public JWK above to the orchestrators",
        args.out.display(),
        key.alg(),
        key.kid()
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to a fresh 0600 file beside `out`, synced, then moves it to `out`: a rename
/// with `force`, otherwise a hard link, which fails when `out` appeared meanwhile.
fn write_private(out: &Path, bytes: &[u8], force: bool) -> anyhow::Result<()> {
    let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
    let name = out
        .file_name()
        .with_context(|| format!("{} names no file", out.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.map_or_else(|| PathBuf::from(&tmp_name), |d| d.join(&tmp_name));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if force {
            std::fs::rename(&tmp, out)
        } else {
            std::fs::hard_link(&tmp, out)
        }
        .with_context(|| format!("cannot write {}", out.display()))
    })();
    let _ = std::fs::remove_file(&tmp);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn args(out: &Path, force: bool) -> KeygenArgs {
        KeygenArgs {
            out: out.to_owned(),
            alg: Alg::EdDsa,
            kid: Some("gw".into()),
            force,
        }
    }

    #[test]
    fn writes_a_private_key_only_its_owner_reads_and_never_overwrites_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("gw.jwk.json");
        run(&args(&out, false)).unwrap();
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let first = std::fs::read_to_string(&out).unwrap();
        let key = SigningKey::from_jwk(&first, None).unwrap();
        assert_eq!((key.kid(), key.alg()), ("gw", SigAlg::EdDSA));
        // The gateway's own reader accepts the file's permissions.
        crate::config::read_private_file(&out).unwrap();

        let err = run(&args(&out, false)).unwrap_err().to_string();
        assert!(err.contains("--force"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), first);

        run(&args(&out, true)).unwrap();
        assert_ne!(std::fs::read_to_string(&out).unwrap(), first);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
    }
}
