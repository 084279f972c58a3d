//! Card validation and compilation off the serving threads (no I/O; runs the pure
//! `card::validate` and `profile::compile` on tokio's blocking pool).
//!
//! For a large card (10,000 skills, JWS signatures) that is milliseconds of CPU. On a serving
//! thread it would hold up every call the thread carries — with one CPU the control plane shares
//! the data plane's only worker (issue 21). On the blocking pool the kernel preempts it like any
//! other thread. Under a CPU quota the pool spends the same quota as the data plane, so compiles
//! run one at a time ([`ONE_AT_A_TIME`]): a burst of refreshes cannot take a whole period's
//! quota at once.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Semaphore;

use crate::card::CardErrors;
use crate::config::Config;
use crate::profile::Profile;

/// One compile at a time, across every integration's worker.
static ONE_AT_A_TIME: Semaphore = Semaphore::const_new(1);

/// Validates `bytes` (a card fetched from `origin`) and compiles its profile under `config`, on
/// the blocking pool. A panic inside goes on as the caller's own.
pub(super) async fn validate_and_compile(
    bytes: Bytes,
    origin: String,
    config: &Arc<Config>,
) -> Result<Profile, CardErrors> {
    let config = Arc::clone(config);
    // Never closed, so acquiring cannot fail.
    let _turn = ONE_AT_A_TIME.acquire().await;
    let joined = tokio::task::spawn_blocking(move || {
        let validated = crate::card::validate(&bytes, &config.card_policy, Some(&origin))?;
        Ok(crate::profile::compile(&validated, &config.caps))
    })
    .await;
    match joined {
        Ok(built) => built,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is stopping, and this task with it.
            Err(_) => std::future::pending().await,
        },
    }
}
