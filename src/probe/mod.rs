//! Safe probes that check one card claim each and record evidence (I/O).
//!
//! Not built yet: the `probe` command that will use it does not exist; it exports nothing. Runtime
//! evidence (refused streams) is already recorded on `profile::snapshot::IntegrationState`.
